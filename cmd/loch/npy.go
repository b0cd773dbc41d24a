package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lochdata/loch/schema"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// npyDescr returns the numpy dtype string of a loch dtype. bfloat16 has no
// numpy dtype: its 16-bit patterns are written as '<u2' (view them with
// ml_dtypes.bfloat16, or shift left by 16 into float32). Variable-size dtypes
// (text, json, bytes) have no .npy form.
func npyDescr(d schema.DType) (string, error) {
	if descr, ok := npyDescrs[d]; ok {
		return descr, nil
	}
	return "", fmt.Errorf("dtype %s has no .npy form", d)
}

// npyDescrs are the numpy dtype strings of the fixed-size loch dtypes.
var npyDescrs = map[schema.DType]string{
	schema.Bool: "|b1", schema.Int8: "|i1", schema.Uint8: "|u1",
	schema.Int16: "<i2", schema.Uint16: "<u2", schema.BFloat16: "<u2", schema.Float16: "<f2",
	schema.Int32: "<i4", schema.Uint32: "<u4", schema.Float32: "<f4",
	schema.Int64: "<i8", schema.Uint64: "<u8", schema.Float64: "<f8",
}

// npyHeader returns the header of a .npy file (format version 1.0, or 2.0
// when the header does not fit in 64 KiB) holding a C-order array of dtype
// d and the given shape. The data, little-endian and C-contiguous, follows
// it directly. The header is padded so that the data starts at a multiple
// of 64 bytes.
func npyHeader(d schema.DType, shape []int) ([]byte, error) {
	descr, err := npyDescr(d)
	if err != nil {
		return nil, err
	}
	dims := make([]string, len(shape))
	for i, n := range shape {
		if n < 0 {
			return nil, fmt.Errorf("npy shape %v has a negative dimension", shape)
		}
		dims[i] = strconv.Itoa(n)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)

	major, lenBytes := byte(1), 2
	if len(dict)+1+len(npyMagic)+2+2 > 0xffff {
		major, lenBytes = 2, 4
	}
	prefix := len(npyMagic) + 2 + lenBytes
	total := prefix + len(dict) + 1 // dict, spaces, '\n'
	if r := total % 64; r != 0 {
		total += 64 - r
	}
	hlen := total - prefix
	out := make([]byte, 0, total)
	out = append(out, npyMagic...)
	out = append(out, major, 0)
	if lenBytes == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
	}
	out = append(out, dict...)
	for len(out) < total-1 {
		out = append(out, ' ')
	}
	return append(out, '\n'), nil
}

// writeNPY writes a whole .npy file: the header for dtype d and shape, then
// data, which must hold exactly the array's bytes.
func writeNPY(w io.Writer, d schema.DType, shape []int, data []byte) error {
	h, err := npyHeader(d, shape)
	if err != nil {
		return err
	}
	if want := schema.NumElements(shape) * d.Size(); len(data) != want {
		return fmt.Errorf("npy %s %v: %d data bytes, want %d", d, shape, len(data), want)
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
