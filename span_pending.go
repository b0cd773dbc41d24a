package loch

// Span and Slot.Index are being built on the engine branch (chunk format
// 1.1, span reads); until it lands a span is read as its whole chunk,
// which is correct and only slower.

// Index is the sample's index in its chunk Slot.Chunk(0) (0 for a split
// sample or a null slot).
func (s Slot) Index() int { return s.index }

// Span plans a read of samples [lo, hi) of chunk id.
func (sc *Scan) Span(id ChunkID, lo, hi int) Read { return Read{Chunk: id} }
