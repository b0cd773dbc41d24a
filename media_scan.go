package loch

import "context"

// SampleMedia is SampleInfo for a video or audio column: the sample's
// shape, stored bytes and media entry, from its chunk header alone
// (docs/format.md §3.2). A null sample gives the zero MediaInfo.
func (sc *Scan) SampleMedia(ctx context.Context, slot Slot) (MediaInfo, error) {
	shape, stored, err := sc.SampleInfo(ctx, slot)
	if err != nil || shape == nil {
		return MediaInfo{}, err
	}
	h, _, err := sc.d.header(ctx, sc.ref(slot.first))
	if err != nil {
		return MediaInfo{}, err
	}
	j := slot.index
	if slot.pieces > 1 {
		j = 0
	}
	m := h.Media(j)
	return MediaInfo{Shape: shape, Container: m.Container, Codec: m.Codec,
		RateNum: int(m.RateNum), RateDen: int(m.RateDen), Bytes: stored}, nil
}
