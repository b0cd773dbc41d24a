package imaging

// jpegConfig reads a JPEG's size and decoded channels from its header as
// image/jpeg's DecodeConfig does, without its reader, buffers and
// allocations (Config is called for every encoded sample a dataset
// stores). It answers only for the files whose answer it is sure of: ok
// is true only when DecodeConfig would succeed with the same height,
// width and channels. Anything it does not follow (extraneous bytes
// between segments, a marker DecodeConfig refuses or treats specially, a
// truncated segment, a frame DecodeConfig rejects, a zero size) gives ok
// false, and the caller asks DecodeConfig, which then decides, errors
// included.
//
// DecodeConfig walks the segments from SOI, skipping APPn, COM, DHT, DQT
// and DRI (reading only APP0's JFIF tag and APP14's Adobe transform, which
// do not change the channels), reads the frame header (SOF0, SOF1 or
// SOF2) and stops there if an APP0 JFIF segment came before it, at the
// next SOS otherwise.
func jpegConfig(data []byte) (height, width, channels int, ok bool) {
	if !isJPEG(data) {
		return 0, 0, 0, false
	}
	jfif, frame := false, false
	for pos := 2; ; {
		if pos >= len(data) || data[pos] != 0xff {
			return 0, 0, 0, false
		}
		for pos < len(data) && data[pos] == 0xff {
			pos++
		}
		if pos+3 > len(data) {
			return 0, 0, 0, false
		}
		m, n := data[pos], be16(data[pos+1:])
		seg := pos + 3 // the segment's body
		pos += 1 + n
		if n < 2 || pos > len(data) {
			return 0, 0, 0, false
		}
		switch {
		case m == mSOS:
			if !frame {
				return 0, 0, 0, false
			}
			return height, width, channels, true
		case m == 0xc0 || m == 0xc1 || m == 0xc2:
			if frame {
				return 0, 0, 0, false // a second frame: DecodeConfig's error
			}
			if height, width, channels, ok = jpegFrame(data[seg:pos]); !ok || jfif {
				return height, width, channels, ok
			}
			frame = true
		case m == 0xe0 && pos-seg >= 5: // each APP0 this long sets or clears the tag
			jfif = string(data[seg:seg+5]) == "JFIF\x00"
		case m >= 0xe0 && m <= 0xef, m == 0xfe, m == 0xc4, m == 0xdb, m == 0xdd:
		default:
			return 0, 0, 0, false
		}
	}
}

// jpegFrame reads a SOF segment's body as image/jpeg's processSOF does,
// with its checks: 8-bit samples, 1, 3 or 4 components with distinct ids
// and quantization tables 0 to 3, and the samplings it decodes. ok is
// false where processSOF fails, and for a zero size.
func jpegFrame(seg []byte) (height, width, channels int, ok bool) {
	nc := (len(seg) - 6) / 3
	if (len(seg) != 6+3 && len(seg) != 6+9 && len(seg) != 6+12) || seg[0] != 8 || int(seg[5]) != nc {
		return 0, 0, 0, false
	}
	height, width = be16(seg[1:]), be16(seg[3:])
	if height == 0 || width == 0 {
		return 0, 0, 0, false
	}
	comp := seg[6:]
	for i := range nc {
		hv, tq := comp[3*i+1], comp[3*i+2]
		if h, v := hv>>4, hv&15; tq > 3 || h < 1 || h > 4 || v < 1 || v > 4 {
			return 0, 0, 0, false
		}
	}
	if !stdSampling(comp) { // distinct ids and the samplings processSOF decodes (as Inspect's rule)
		return 0, 0, 0, false
	}
	if nc == 1 {
		return height, width, 1, true
	}
	return height, width, 3, true // YCbCr or RGB; CMYK and YCbCrK are stored as RGB
}
