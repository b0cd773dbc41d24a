// Package ftsindex is the byte format of full-text indexes
// (docs/format.md §2.9, format 1.11): the descriptor
// `indexes/<commit id>/<uid>.bm25` (an envelope of kind 'V') and the
// binary `fts/<hash>` segment objects that hold its term dictionary,
// postings, positions and row ids. It only encodes and decodes, whole
// (Encode, DecodeSegment) or one range at a time (ParseFooter and the
// Parse functions that follow it); the index itself is package fts, and
// garbage collection and verification (package loch) read descriptors
// through it.
package ftsindex

import (
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/vindex"
)

// The fixed fields of a full-text descriptor.
const (
	Metric   = "bm25" // the last segment of its key
	Type     = "bm25"
	Analyzer = "en"
)

// Minor is the format minor version that defined full-text indexes.
const Minor = 11

// Segment is one segment's entry in a descriptor.
type Segment struct {
	Key    string `json:"key"`
	Bytes  int64  `json:"bytes"`
	Docs   int64  `json:"docs"`
	Tokens int64  `json:"tokens"`
}

// Descriptor is the body of an `indexes/<commit id>/<uid>.bm25` object.
type Descriptor struct {
	vindex.Header
	Analyzer string           `json:"analyzer"`
	DType    string           `json:"dtype"`
	Docs     int64            `json:"docs"`
	Tokens   int64            `json:"tokens"`
	Covered  []vindex.Covered `json:"covered"`
	Segments []Segment        `json:"segments"`
	Base     string           `json:"base,omitempty"`
	Time     time.Time        `json:"time"`
}

// IsKey reports whether key names a full-text descriptor.
func IsKey(key string) bool {
	_, _, m, ok := keys.ParseIndex(key)
	return ok && isMetric(m)
}

// SegmentKey is the key of a segment object with the given content.
func SegmentKey(obj []byte) string { return keys.Make(keys.Text, manifest.Hash(obj)) }

func isSegmentKey(key string) bool {
	k, _, ok := keys.Parse(key)
	return ok && k == keys.Text
}

func corruptf(format string, a ...any) error {
	return base.Markf(base.ErrCorrupt, format, a...)
}

// EncodeDescriptor returns the descriptor's envelope.
func EncodeDescriptor(d *Descriptor) ([]byte, error) {
	return manifest.Encode(manifest.KindIndex, d)
}

// DecodeDescriptor decodes the descriptor stored at key and checks it
// against the key and itself. A descriptor of another type or analyzer
// is ErrNewerFormat; other errors match ErrCorrupt. Errors name the key.
func DecodeDescriptor(key string, obj []byte) (*Descriptor, error) {
	return vindex.DecodeAt(key, obj, "full-text index", "full-text index", isMetric, (*Descriptor).check)
}

func isMetric(m string) bool { return m == Metric }

func (d *Descriptor) check(version string, uid int, metric string) error {
	if err := d.CheckKey(version, uid, metric); err != nil {
		return err
	}
	switch {
	case d.Type != Type:
		return base.Markf(base.ErrNewerFormat, "index type %q, this loch knows %q; upgrade loch", d.Type, Type)
	case d.Analyzer != Analyzer:
		return base.Markf(base.ErrNewerFormat, "analyzer %q, this loch knows %q; upgrade loch", d.Analyzer, Analyzer)
	}
	var docs, tokens int64
	for i, s := range d.Segments {
		if !isSegmentKey(s.Key) || s.Bytes < header+footerLen || s.Docs < 0 || s.Tokens < 0 {
			return corruptf("segment %d: key %q, %d bytes, %d docs, %d tokens", i, s.Key, s.Bytes, s.Docs, s.Tokens)
		}
		docs += s.Docs
		tokens += s.Tokens
	}
	if docs != d.Docs || tokens != d.Tokens {
		return corruptf("segments hold %d docs and %d tokens, descriptor says %d and %d", docs, tokens, d.Docs, d.Tokens)
	}
	return nil
}

// Objects returns the keys of the segments the descriptor names.
func (d *Descriptor) Objects() []string {
	out := make([]string, len(d.Segments))
	for i, s := range d.Segments {
		out[i] = s.Key
	}
	return out
}
