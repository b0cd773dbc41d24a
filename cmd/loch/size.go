package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// Sizes. Every byte count the CLI prints goes through formatBytes, and
// every size a flag takes through parseBytes, so that all commands print
// and accept the same units.
//
// Printed sizes use binary (IEC) units, as info's table always did:
// "512 B", "1.5 KiB", "8.0 MiB". Accepted sizes are a number with an
// optional unit, case-insensitive, a space allowed between: binary units
// (KiB, MiB, GiB, TiB; also Ki, Mi, ...) are powers of 1024; decimal units
// (kB, MB, GB, TB; also k, M, G, T) are powers of 1000, as go-humanize
// reads them: 8MiB is 8388608 bytes, 8MB and 8M are 8000000.

// formatBytes formats a byte count with binary units.
func formatBytes(n int64) string {
	if n < 0 {
		return "-" + humanize.IBytes(uint64(-n))
	}
	return humanize.IBytes(uint64(n))
}

// formatRate formats bytes per second, n bytes in secs seconds.
func formatRate(n int64, secs float64) string {
	return formatBytes(int64(float64(n)/max(secs, 1e-9))) + "/s"
}

// parseBytes parses a size such as 8388608, 8MiB, 8MB or 8M (see above).
// The value is checked where it is used.
func parseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil || n > math.MaxInt64 || strings.HasPrefix(strings.TrimSpace(s), "-") {
		return 0, fmt.Errorf("%q is not a size: want a byte count like 8388608, 8MiB, 8MB or 8M", s)
	}
	return int64(n), nil
}

// sizeFlag is a flag value holding a size in bytes, parsed by parseBytes
// and shown by formatBytes.
type sizeFlag int64

func (f *sizeFlag) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*f = sizeFlag(n)
	return nil
}

func (f *sizeFlag) String() string {
	if *f == 0 {
		return "0"
	}
	return strings.ReplaceAll(formatBytes(int64(*f)), " ", "")
}

func (f *sizeFlag) Type() string { return "size" }
