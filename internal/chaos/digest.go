package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
)

// DigestEnv names the environment variable that tells a program built for
// the campaign (Config.Digest) to print the digest of the dataset at its
// URL and exit.
const DigestEnv = "LOCH_CHAOS_DIGEST"

// Digest reads every row of the dataset at url (its main branch) through
// the loader, one epoch in position order, and returns the number of rows
// and a SHA-256 of what it delivered: each batch's positions, row ids and
// columns (by name) with their shapes, null marks and bytes. Two versions
// with the same rows in the same places have the same digest, whatever
// their commits, fragments or chunks.
func Digest(ctx context.Context, url string) (rows int64, sum string, err error) {
	d, err := loch.Open(ctx, url)
	if err != nil {
		return 0, "", err
	}
	defer d.Close()
	l, err := loader.New(ctx, d.Scan(), loader.Config{BatchSize: 16, Shuffle: order.ModeNone})
	if err != nil {
		return 0, "", err
	}
	defer l.Close()
	h := sha256.New()
	for {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rows, "", err
		}
		rows += int64(b.Len())
		hashBatch(h, b)
		l.Release(b)
	}
	return rows, fmt.Sprintf("%x", h.Sum(nil)), nil
}

func hashBatch(h hash.Hash, b *loader.Batch) {
	num := func(v ...int64) {
		for _, x := range v {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(x)))
		}
	}
	for i := range b.Positions {
		num(b.Positions[i], int64(b.RowIDs[i]))
	}
	names := make([]string, 0, len(b.Columns))
	for name := range b.Columns {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := b.Columns[name]
		h.Write([]byte(name))
		num(int64(c.DType))
		for _, d := range c.Shape {
			num(int64(d))
		}
		for _, s := range c.Shapes {
			for _, d := range s {
				num(int64(d))
			}
			num(-1)
		}
		for _, null := range c.Null {
			if null {
				num(1)
			} else {
				num(0)
			}
		}
		h.Write(c.Data)
		for _, item := range c.Items {
			num(int64(len(item)))
			h.Write(item)
		}
	}
}
