package pgwire

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
)

// PostgreSQL type OIDs the server sends (pg_type.oid of a stock server).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidUnknown     = 705
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
	// VectorOID is the OID the server gives pgvector's vector type (an
	// embedding: a one-dimensional FLOAT or DOUBLE array or list), sent
	// in pgvector's text form '[1,2,3]'. pgvector has no fixed OID (an
	// extension's types get one when it is created); loch uses this one,
	// the first OID PostgreSQL gives user objects plus one.
	VectorOID = 16385
)

// pgType is how one result column is sent: its OID, its size (-1:
// variable) and whether it has a binary form here; sample marks a
// sample's STRUCT (isSample), sent as the bytea of its data field.
type pgType struct {
	oid    uint32
	size   int16
	binary bool
	sample bool
}

// scalarTypes are the PostgreSQL types of DuckDB's scalar type names.
var scalarTypes = map[string]pgType{
	"BOOLEAN": {oidBool, 1, true, false},
	"TINYINT": {oidInt2, 2, true, false}, "SMALLINT": {oidInt2, 2, true, false}, "UTINYINT": {oidInt2, 2, true, false},
	"INTEGER": {oidInt4, 4, true, false}, "USMALLINT": {oidInt4, 4, true, false},
	"BIGINT": {oidInt8, 8, true, false}, "UINTEGER": {oidInt8, 8, true, false}, "UBIGINT": {oidInt8, 8, true, false},
	"FLOAT": {oidFloat4, 4, true, false}, "DOUBLE": {oidFloat8, 8, true, false},
	"BLOB": {oidBytea, -1, true, false}, "JSON": {oidJSON, -1, true, false},
	"DATE": {oidDate, 4, true, false}, "TIME": {oidTime, 8, true, false},
	"TIMESTAMP": {oidTimestamp, 8, true, false}, "TIMESTAMP_S": {oidTimestamp, 8, true, false},
	"TIMESTAMP_MS": {oidTimestamp, 8, true, false}, "TIMESTAMP_NS": {oidTimestamp, 8, true, false},
	"TIMESTAMP WITH TIME ZONE": {oidTimestampTZ, 8, true, false}, "TIMESTAMPTZ": {oidTimestampTZ, 8, true, false},
	"UUID": {oidUUID, 16, true, false},
}

// typeFor maps a DuckDB type name (database/sql's DatabaseTypeName) to
// the PostgreSQL type a column of it is sent as (docs/pg.md has the
// table); pgOIDMacro says the same in SQL for the system catalogs.
func typeFor(duck string) pgType {
	if t, ok := scalarTypes[duck]; ok {
		return t
	}
	switch {
	case strings.HasPrefix(duck, "DECIMAL"):
		return pgType{oidFloat8, 8, true, false}
	case isVector(duck):
		return pgType{VectorOID, -1, true, false}
	case isSample(duck):
		return pgType{oidBytea, -1, true, true}
	case strings.HasSuffix(duck, "]"), strings.HasPrefix(duck, "STRUCT"), strings.HasPrefix(duck, "MAP"), strings.HasPrefix(duck, "UNION"):
		return pgType{oidJSON, -1, true, false}
	}
	return pgType{oidText, -1, true, false} // VARCHAR, ENUM, INTERVAL, HUGEINT, ...
}

// isVector reports whether a DuckDB type is an embedding: a
// one-dimensional array or list of FLOAT or DOUBLE.
func isVector(duck string) bool {
	for _, el := range []string{"FLOAT[", "DOUBLE["} {
		if rest, ok := strings.CutPrefix(duck, el); ok {
			return strings.Count(rest, "[") == 0 && strings.HasSuffix(rest, "]")
		}
	}
	return false
}

// pgEpoch is PostgreSQL's binary time origin.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// encode writes value v of a column of type t in format (0 text, 1
// binary); nil for NULL.
func encode(v any, t pgType, format int16) ([]byte, error) {
	if t.sample {
		v = sampleData(v)
	}
	if v == nil {
		return nil, nil
	}
	if format == 1 && t.binary {
		return encodeBinary(v, t)
	}
	return encodeText(v, t)
}

func encodeText(v any, t pgType) ([]byte, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return []byte("t"), nil
		}
		return []byte("f"), nil
	case []byte:
		switch {
		case t.oid == oidBytea:
			return []byte(`\x` + hex.EncodeToString(x)), nil
		case t.oid == oidUUID && len(x) == 16: // duckdb-go's UUID
			return []byte(uuidText([16]byte(x))), nil
		}
		return x, nil
	case string:
		return []byte(x), nil
	case float32:
		return []byte(formatFloat(float64(x), 32)), nil
	case float64:
		return []byte(formatFloat(x, 64)), nil
	case time.Time:
		return []byte(formatTime(x, t.oid)), nil
	case *big.Int:
		return []byte(x.String()), nil
	case []any:
		if t.oid == VectorOID {
			return vectorText(x)
		}
	case [16]byte:
		return []byte(uuidText(x)), nil
	}
	if i, ok := asInt(v); ok {
		return strconv.AppendInt(nil, i, 10), nil
	}
	if f, ok := v.(interface{ Float64() float64 }); ok {
		return []byte(formatFloat(f.Float64(), 64)), nil
	}
	if t.oid == oidJSON {
		return json.Marshal(v)
	}
	if s, ok := v.(fmt.Stringer); ok {
		return []byte(s.String()), nil
	}
	if b, err := json.Marshal(v); err == nil {
		return b, nil
	}
	return []byte(fmt.Sprint(v)), nil
}

func encodeBinary(v any, t pgType) ([]byte, error) {
	switch t.oid {
	case oidBool:
		if b, _ := v.(bool); b {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case oidInt2, oidInt4, oidInt8:
		i, ok := asInt(v)
		if !ok {
			return nil, fmt.Errorf("value %T %v is not an integer", v, v)
		}
		b := binary.BigEndian.AppendUint64(nil, uint64(i))
		return b[8-t.size:], nil
	case oidFloat4:
		f, _ := v.(float32)
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)), nil
	case oidFloat8:
		f, ok := v.(float64)
		if fv, isF := v.(interface{ Float64() float64 }); !ok && isF {
			f = fv.Float64()
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case oidDate:
		tm := v.(time.Time)
		days := tm.Sub(pgEpoch).Hours() / 24
		return binary.BigEndian.AppendUint32(nil, uint32(int32(math.Floor(days)))), nil
	case oidTimestamp, oidTimestampTZ:
		tm := v.(time.Time)
		return binary.BigEndian.AppendUint64(nil, uint64(tm.Sub(pgEpoch).Microseconds())), nil
	case oidTime:
		tm := v.(time.Time)
		us := int64(tm.Hour())*3600e6 + int64(tm.Minute())*60e6 + int64(tm.Second())*1e6 + int64(tm.Nanosecond()/1000)
		return binary.BigEndian.AppendUint64(nil, uint64(us)), nil
	case oidUUID:
		if u, ok := v.([]byte); ok && len(u) == 16 {
			return u, nil
		}
	case oidBytea:
		if b, ok := v.([]byte); ok {
			return b, nil // binary bytea is the bytes themselves
		}
	case VectorOID:
		if xs, ok := v.([]any); ok {
			return vectorBinary(xs)
		}
	}
	return encodeText(v, t) // text and json: the same bytes
}

// asInt converts Go's integer types.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// formatFloat writes a float as PostgreSQL does (shortest exact form,
// NaN, Infinity).
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func formatTime(t time.Time, oid uint32) string {
	switch oid {
	case oidDate:
		return t.Format("2006-01-02")
	case oidTime:
		return t.Format("15:04:05.999999")
	case oidTimestampTZ:
		return t.UTC().Format("2006-01-02 15:04:05.999999") + "+00"
	}
	return t.Format("2006-01-02 15:04:05.999999")
}

func vectorText(xs []any) ([]byte, error) {
	b := []byte{'['}
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		switch f := x.(type) {
		case float32:
			b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
		case float64:
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		default:
			return nil, fmt.Errorf("vector element %T, want a float", x)
		}
	}
	return append(b, ']'), nil
}

func uuidText(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// paramOID is the OID the server reports for a parameter DuckDB typed as
// duck (query.Described.Params): text where DuckDB cannot tell, as
// PostgreSQL does.
func paramOID(duck string) uint32 {
	switch duck {
	case "LIST", "ARRAY":
		return VectorOID
	case "DECIMAL":
		return oidNumeric
	case "HUGEINT":
		return oidNumeric
	case "":
		return oidText
	}
	return typeFor(duck).oid
}

// literal is the SQL literal of one bound parameter: raw in format (0
// text, 1 binary) of a parameter of type oid, NULL when raw is nil. It
// validates numbers and quotes text, so no parameter can change the
// statement it is spliced into.
func literal(raw []byte, format int16, oid uint32) (string, error) {
	if raw == nil {
		return "NULL", nil
	}
	if format == 1 {
		return binaryLiteral(raw, oid)
	}
	s := string(raw)
	if (oid == oidText || oid == oidVarchar || oid == oidUnknown) && !utf8.ValidString(s) {
		// Not text: bytes a client sent for a parameter the server could
		// only type as text (an image column's, say) are a BLOB.
		return "from_hex('" + hex.EncodeToString(raw) + "')", nil
	}
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
			return "", badParam(s, "an integer")
		}
		return strings.TrimSpace(s), nil
	case oidFloat4, oidFloat8, oidNumeric:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return "", badParam(s, "a number")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "'" + formatFloat(f, 64) + "'::DOUBLE", nil
		}
		return strings.TrimSpace(s), nil
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "1", "yes", "on", "y":
			return "TRUE", nil
		case "f", "false", "0", "no", "off", "n":
			return "FALSE", nil
		}
		return "", badParam(s, "a boolean")
	case oidBytea:
		if h, ok := strings.CutPrefix(s, `\x`); ok {
			if _, err := hex.DecodeString(h); err != nil {
				return "", badParam(s, `bytea hex \x...`)
			}
			return "from_hex('" + h + "')", nil
		}
		return "from_hex('" + hex.EncodeToString(raw) + "')", nil
	case VectorOID:
		return vectorLiteral(s)
	case oidJSON, oidJSONB:
		return quote(s) + "::JSON", nil
	case oidDate:
		return "DATE " + quote(s), nil
	case oidTimestamp:
		return "TIMESTAMP " + quote(s), nil
	case oidTimestampTZ:
		return "TIMESTAMPTZ " + quote(s), nil
	case oidTime:
		return "TIME " + quote(s), nil
	case oidUUID:
		return quote(s) + "::UUID", nil
	}
	return quote(s), nil
}

// binaryLiteral is literal for a parameter in binary format.
func binaryLiteral(raw []byte, oid uint32) (string, error) {
	n := len(raw)
	switch {
	case oid == oidBool && n == 1:
		return map[bool]string{true: "TRUE", false: "FALSE"}[raw[0] != 0], nil
	case oid == oidInt2 && n == 2:
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(raw)))), nil
	case oid == oidInt4 && n == 4:
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(raw)))), nil
	case oid == oidInt8 && n == 8:
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(raw)), 10), nil
	case oid == oidFloat4 && n == 4:
		return floatLiteral(float64(math.Float32frombits(binary.BigEndian.Uint32(raw)))), nil
	case oid == oidFloat8 && n == 8:
		return floatLiteral(math.Float64frombits(binary.BigEndian.Uint64(raw))), nil
	case oid == oidBytea, oid == oidUnknown:
		return "from_hex('" + hex.EncodeToString(raw) + "')", nil
	case oid == oidText, oid == oidVarchar, oid == oidJSON:
		return literal(raw, 0, oid)
	case oid == oidJSONB && n > 0 && raw[0] == 1:
		return literal(raw[1:], 0, oidJSON)
	case oid == oidDate && n == 4:
		d := pgEpoch.AddDate(0, 0, int(int32(binary.BigEndian.Uint32(raw))))
		return "DATE '" + d.Format("2006-01-02") + "'", nil
	case (oid == oidTimestamp || oid == oidTimestampTZ) && n == 8:
		t := pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(raw))) * time.Microsecond)
		kw := map[bool]string{true: "TIMESTAMPTZ", false: "TIMESTAMP"}[oid == oidTimestampTZ]
		return kw + " '" + t.Format("2006-01-02 15:04:05.999999") + "'", nil
	case oid == oidUUID && n == 16:
		var u [16]byte
		copy(u[:], raw)
		return "'" + uuidText(u) + "'::UUID", nil
	case oid == VectorOID:
		return vectorBinaryLiteral(raw)
	}
	return "", fmt.Errorf("a binary parameter of type OID %d (%d bytes): send it as text: %w", oid, n, loch.ErrInvalidArgument)
}

// vectorBinaryLiteral reads pgvector's binary form (vectorBinary) into
// a DuckDB FLOAT array: the declared dimensions must account for every
// byte sent, so nothing is allocated beyond the parameter's own size.
func vectorBinaryLiteral(raw []byte) (string, error) {
	if len(raw) < 4 {
		return "", fmt.Errorf("a binary vector parameter of %d bytes: want at least 4 (dimensions, unused): %w", len(raw), loch.ErrInvalidArgument)
	}
	dim := int(binary.BigEndian.Uint16(raw))
	if len(raw) != 4+4*dim {
		return "", fmt.Errorf("a binary vector parameter of %d dimensions: want %d bytes, have %d: %w", dim, 4+4*dim, len(raw), loch.ErrInvalidArgument)
	}
	parts := make([]string, dim)
	for i := range parts {
		f := math.Float32frombits(binary.BigEndian.Uint32(raw[4+4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return "", fmt.Errorf("a binary vector parameter: element %d is %v, want a finite number: %w", i, f, loch.ErrInvalidArgument)
		}
		parts[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
	}
	return fmt.Sprintf("[%s]::FLOAT[%d]", strings.Join(parts, ","), dim), nil
}

func floatLiteral(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "'" + formatFloat(f, 64) + "'::DOUBLE"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// vectorLiteral reads pgvector's text form '[1,2,3]' into a DuckDB FLOAT
// array of that length.
func vectorLiteral(s string) (string, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), "[")
	body, ok2 := strings.CutSuffix(body, "]")
	if !ok || !ok2 {
		return "", badParam(s, "a vector [1,2,3]")
	}
	var parts []string
	if strings.TrimSpace(body) != "" {
		for _, p := range strings.Split(body, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return "", badParam(s, "a vector of finite numbers [1,2,3]")
			}
			parts = append(parts, strconv.FormatFloat(f, 'g', -1, 32))
		}
	}
	return fmt.Sprintf("[%s]::FLOAT[%d]", strings.Join(parts, ","), len(parts)), nil
}

func badParam(s, want string) error {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Errorf("parameter %q: want %s: %w", s, want, loch.ErrInvalidArgument)
}

// quote is s as a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// isSample reports whether a DuckDB type is the STRUCT of an image,
// video, audio or large-tensor column with its data field (the engine's
// query.Options.SampleData): a STRUCT that starts shape INTEGER[] and
// ends data BLOB.
func isSample(duck string) bool {
	body, ok := strings.CutPrefix(duck, "STRUCT(")
	if !ok {
		return false
	}
	body = strings.ReplaceAll(body, `"`, "")
	return strings.HasPrefix(body, "shape INTEGER[]") && strings.HasSuffix(body, " "+query.SampleDataField+" BLOB)")
}

// sampleData is the data field of a sample's STRUCT v (nil: NULL).
func sampleData(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if b, ok := m[query.SampleDataField].([]byte); ok {
		return b
	}
	return nil
}

// vectorBinary is pgvector's binary form of a vector (vector_send): the
// dimensions (int16), an unused int16, then each element a float4,
// network byte order.
func vectorBinary(xs []any) ([]byte, error) {
	if len(xs) > math.MaxUint16 {
		return nil, fmt.Errorf("vector of %d dimensions, pgvector's binary form holds at most %d", len(xs), math.MaxUint16)
	}
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 4+4*len(xs)), uint16(len(xs)))
	b = binary.BigEndian.AppendUint16(b, 0)
	for _, x := range xs {
		var f float32
		switch v := x.(type) {
		case float32:
			f = v
		case float64:
			f = float32(v)
		default:
			return nil, fmt.Errorf("vector element %T, want a float", x)
		}
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b, nil
}
