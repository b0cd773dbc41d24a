package pgwire

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch"
)

// copySignature opens PostgreSQL's binary COPY format.
const copySignature = "PGCOPY\n\377\r\n\000"

// binaryToCSV turns the binary COPY data in ci.tmp (as the client sent
// it) into CSV in its place: each field decoded by its column's OID.
func (ci *copyIn) binaryToCSV() error {
	raw := ci.tmp + ".bin"
	if err := os.Rename(ci.tmp, raw); err != nil {
		return fmt.Errorf("copy from stdin: %w", err)
	}
	in, err := os.Open(raw)
	if err != nil {
		return fmt.Errorf("copy from stdin: %w", err)
	}
	defer in.Close()
	out, err := os.Create(ci.tmp)
	if err != nil {
		return fmt.Errorf("copy from stdin: %w", err)
	}
	defer out.Close()
	r, w := bufio.NewReader(in), bufio.NewWriter(out)
	if err := readCopyHeader(r); err != nil {
		return err
	}
	for {
		var n int16
		err := binary.Read(r, binary.BigEndian, &n)
		if err == io.EOF || err == nil && n == -1 { // the trailer is optional (CopyDone ends the data)
			return w.Flush()
		}
		if err != nil {
			return badCopy("a tuple's field count", err)
		}
		if int(n) != len(ci.oids) {
			return fmt.Errorf("binary COPY: a tuple of %d fields, want %d: %w", n, len(ci.oids), loch.ErrInvalidArgument)
		}
		if err := ci.binaryTuple(r, w); err != nil {
			return err
		}
	}
}

func readCopyHeader(r io.Reader) error {
	head := make([]byte, len(copySignature)+8)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(copySignature)]) != copySignature {
		return badCopy("the PGCOPY signature", err)
	}
	ext := binary.BigEndian.Uint32(head[len(copySignature)+4:])
	if _, err := io.CopyN(io.Discard, r, int64(ext)); err != nil {
		return badCopy("the header extension", err)
	}
	return nil
}

func badCopy(what string, err error) error {
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("binary COPY: %s: %v: %w", what, err, loch.ErrInvalidArgument)
}

// binaryTuple writes one tuple's fields as a CSV line.
func (ci *copyIn) binaryTuple(r io.Reader, w *bufio.Writer) error {
	for i, oid := range ci.oids {
		var size int32
		if err := binary.Read(r, binary.BigEndian, &size); err != nil {
			return badCopy("a field's length", err)
		}
		if i > 0 {
			w.WriteByte(',')
		}
		if size < 0 {
			continue // NULL
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(r, b); err != nil {
			return badCopy("a field", err)
		}
		v, err := binaryText(b, oid)
		if err != nil {
			return fmt.Errorf("binary COPY column %s: %w", ci.cols[i], err)
		}
		w.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
	}
	return w.WriteByte('\n')
}

// binaryText is a binary COPY field of type oid as the text copyCast
// reads.
func binaryText(b []byte, oid uint32) (string, error) {
	n := len(b)
	switch {
	case oid == oidBool && n == 1:
		return strconv.FormatBool(b[0] != 0), nil
	case oid == oidInt2 && n == 2:
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(b)))), nil
	case oid == oidInt4 && n == 4:
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(b)))), nil
	case oid == oidInt8 && n == 8:
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10), nil
	case oid == oidFloat4 && n == 4:
		return formatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b))), 32), nil
	case oid == oidFloat8 && n == 8:
		return formatFloat(math.Float64frombits(binary.BigEndian.Uint64(b)), 64), nil
	case oid == oidBytea:
		return `\x` + hex.EncodeToString(b), nil
	case oid == oidDate && n == 4:
		return pgEpoch.AddDate(0, 0, int(int32(binary.BigEndian.Uint32(b)))).Format("2006-01-02"), nil
	case (oid == oidTimestamp || oid == oidTimestampTZ) && n == 8:
		t := pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(b))) * time.Microsecond)
		return t.Format("2006-01-02 15:04:05.999999"), nil
	case oid == oidUUID && n == 16:
		return uuidText([16]byte(b)), nil
	case oid == oidJSONB && n > 0 && b[0] == 1:
		return string(b[1:]), nil
	case oid == VectorOID && n >= 4 && b[0] != '[':
		return vectorFromBinary(b)
	case oid == oidText, oid == oidVarchar, oid == oidJSON, oid == VectorOID:
		return string(b), nil
	}
	return "", fmt.Errorf("a binary value of type OID %d (%d bytes) cannot be read: %w", oid, n, errUnsupported)
}

// vectorFromBinary reads pgvector's binary form (vectorBinary) as its
// text form [1,2,3]; text ('[...') is what a client that does not know
// pgvector sends.
func vectorFromBinary(b []byte) (string, error) {
	dim := int(binary.BigEndian.Uint16(b))
	if len(b) != 4+4*dim {
		return "", fmt.Errorf("a binary vector of %d dimensions in %d bytes, want %d: %w", dim, len(b), 4+4*dim, loch.ErrInvalidArgument)
	}
	xs := make([]any, dim)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.BigEndian.Uint32(b[4+4*i:]))
	}
	t, err := vectorText(xs)
	return string(t), err
}

// sendCopyBinary sends a COPY ... TO STDOUT (FORMAT binary)'s rows in
// PostgreSQL's binary COPY format: CopyOutResponse (every column binary),
// the header (signature, flags 0, no extension) with the first row, a
// CopyData per tuple (its field count, then each field's length, -1 for
// NULL, and its binary form as a result column of its type is sent), the
// trailer (-1), CopyDone and CommandComplete COPY n.
func (c *conn) sendCopyBinary(res *result) error {
	formats := make([]uint16, len(res.names))
	for i := range formats {
		formats[i] = 1
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 1, ColumnFormatCodes: formats})
	buf := append([]byte(copySignature), 0, 0, 0, 0, 0, 0, 0, 0)
	return c.copyRows(res, func(vals []any) (int, error) {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(vals)))
		for i, v := range vals {
			b, err := encode(v, res.types[i], 1)
			if err != nil {
				return 0, fmt.Errorf("column %s: %w", res.names[i], err)
			}
			if b == nil {
				buf = binary.BigEndian.AppendUint32(buf, math.MaxUint32) // -1: NULL
				continue
			}
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
			buf = append(buf, b...)
		}
		c.be.Send(&pgproto3.CopyData{Data: buf})
		size := len(buf)
		buf = buf[:0]
		return size, nil
	}, func() []byte { return append(buf, 0xff, 0xff) }) // the trailer (after the header when no row came)
}
