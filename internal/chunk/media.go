package chunk

import (
	"bytes"
	"encoding/binary"
)

// Sample compression codes of media samples (format 1.7, docs/format.md
// §3.2): container bytes kept as ingested, with a media table in the
// header.
const (
	SampleVideo uint8 = 3
	SampleAudio uint8 = 4
)

// MediaMinor is the chunk minor version of media chunks.
const MediaMinor = 7

// mediaEntryLen is the size of one media table entry.
const mediaEntryLen = 32

// Media is one sample's media table entry: its container and codec names
// and its rate (video: frames per second RateNum/RateDen; audio: sample
// rate RateNum, RateDen 1). The zero Media is a null sample's.
type Media struct {
	Container string // at most 8 bytes
	Codec     string // at most 16 bytes
	RateNum   uint32
	RateDen   uint32
}

// IsMedia reports whether a sample compression code is video or audio.
func IsMedia(sampleCompression uint8) bool {
	return sampleCompression == SampleVideo || sampleCompression == SampleAudio
}

// AddMedia is Add with the sample's media entry, kept when the chunk is a
// media chunk (ignored otherwise). Longer container or codec names are cut
// to 8 and 16 bytes.
func (b *Builder) AddMedia(shape []int, data []byte, null bool, m Media) error {
	if err := b.Add(shape, data, null); err != nil {
		return err
	}
	if !null && IsMedia(b.sample) {
		b.media[len(b.media)-1] = m
	}
	return nil
}

func appendMedia(hdr []byte, ms []Media) []byte {
	for _, m := range ms {
		var e [mediaEntryLen]byte
		copy(e[0:8], m.Container)
		copy(e[8:24], m.Codec)
		binary.LittleEndian.PutUint32(e[24:], m.RateNum)
		binary.LittleEndian.PutUint32(e[28:], m.RateDen)
		hdr = append(hdr, e[:]...)
	}
	return hdr
}

func parseMedia(b []byte, n int) []Media {
	ms := make([]Media, n)
	for i := range ms {
		e := b[i*mediaEntryLen : (i+1)*mediaEntryLen]
		ms[i] = Media{
			Container: string(bytes.TrimRight(e[0:8], "\x00")),
			Codec:     string(bytes.TrimRight(e[8:24], "\x00")),
			RateNum:   binary.LittleEndian.Uint32(e[24:]),
			RateDen:   binary.LittleEndian.Uint32(e[28:]),
		}
	}
	return ms
}

// Media returns sample i's media entry (the zero Media for a chunk of
// another sample compression).
func (h *Header) Media(i int) Media {
	if h.media == nil {
		return Media{}
	}
	return h.media[i]
}
