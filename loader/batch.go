package loader

import (
	"github.com/lochdata/loch/schema"
)

// Batch is one batch of rows, every requested column collated into one
// contiguous buffer. A Batch and its buffers belong to the caller until it
// passes the Batch to Loader.Release, after which they are reused.
type Batch struct {
	// Epoch and Index number the batch: Index counts from 0 in each epoch
	// on this rank.
	Epoch, Index int
	// Positions are the rows' positions in the snapshot; RowIDs their
	// stable ids.
	Positions []int64
	RowIDs    []uint64
	// Datasets gives each row's dataset (its index in NewMix's views);
	// nil for a single dataset.
	Datasets []int
	// Columns maps each requested column to its collated samples.
	Columns map[string]*Collated
}

// Len is the number of rows in the batch.
func (b *Batch) Len() int { return len(b.Positions) }

// Collated is one column of a batch: the column's samples of every row of
// the batch collated together. (It is named for what the loader does to
// the samples, not Tensor or Column: loch.Tensor makes a Sample, and
// schema.Column declares a column.)
//
// Numeric columns are collated into Data, C-contiguous, with Shape
// [batch, ...]. When the samples' shapes differ (ragged columns), each
// dimension is padded with zeros to the batch's largest and Shapes holds
// every sample's own shape; with Config.RaggedAsList they are returned as a
// list instead, each sample's bytes in Items and its shape in Shapes.
// Variable-size columns (text, json, bytes) are returned as a list in
// Items. A null sample is zero-filled (or nil in Items) and marked in Null.
type Collated struct {
	DType  schema.DType
	Shape  []int
	Data   []byte
	Shapes [][]int  // per-sample shapes; set for ragged columns
	Items  [][]byte // per-sample bytes; set for text, json and bytes columns
	Null   []bool   // per-sample null marks; nil when no sample is null
}
