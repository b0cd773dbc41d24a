package viewer

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// smallTensor is the most elements a tensor summary lists.
const smallTensor = 16

// maxText bounds the text a grid cell shows.
const maxText = 400

// numbers returns the elements of a decoded numeric sample; nil for a
// variable-size dtype or data too short for its shape.
func numbers(d schema.DType, s loch.Sample) []float64 {
	if d.Variable() || d.Size() == 0 {
		return nil
	}
	n := len(s.Data) / d.Size()
	out := make([]float64, n)
	for i := range out {
		out[i] = d.Float64(s.Data, i)
	}
	return out
}

// num formats a number briefly.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// tensorSummary describes a numeric sample: shape and dtype, min, max and
// mean, and the values themselves when there are few.
func tensorSummary(c *schema.Column, s loch.Sample) string {
	v := numbers(c.DType, s)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.DType, schema.FormatShape(s.Shape))
	if len(v) == 0 {
		return b.String()
	}
	if len(v) == 1 && len(s.Shape) == 0 {
		return num(v[0])
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, x := range v {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	fmt.Fprintf(&b, " min %s max %s mean %s", num(lo), num(hi), num(sum/float64(len(v))))
	if len(v) <= smallTensor {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = num(x)
		}
		fmt.Fprintf(&b, " [%s]", strings.Join(parts, ", "))
	}
	return b.String()
}

// className names class v of a class-label column.
func className(c *schema.Column, v int64) string {
	if n, ok := c.ClassName(v); ok {
		return n
	}
	return strconv.FormatInt(v, 10)
}

// labels returns the class ids of a class-label sample.
func labels(c *schema.Column, s loch.Sample) []int64 {
	v := numbers(c.DType, s)
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// labelText names the classes of a class-label sample.
func labelText(c *schema.Column, s loch.Sample) string {
	ids := labels(c, s)
	names := make([]string, len(ids))
	for i, v := range ids {
		names[i] = className(c, v)
	}
	return strings.Join(names, ", ")
}

// jsonText pretty-prints a JSON sample (as stored when it is not JSON).
func jsonText(data []byte) string {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return string(data)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(data)
	}
	return string(b)
}
