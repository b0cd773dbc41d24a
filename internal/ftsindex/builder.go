package ftsindex

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/lochdata/loch/internal/manifest"
)

// Token is one analysed term and its position in its document.
type Token struct {
	Term string
	Pos  uint32
}

// Builder accumulates documents in memory and encodes them as one
// segment. Documents may be added in any order of row id, each once. It
// is not safe for concurrent use; builders filled apart are combined with
// Merge.
type Builder struct {
	terms  map[string]*termAcc
	ids    []uint64
	tokens uint64
	seen   map[string]int // Add's, reused: a term's posting in the doc
}

type termAcc struct {
	posts []Posting
	start []uint32 // each posting's first position in pos
	pos   []uint32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{terms: map[string]*termAcc{}} }

// Docs is the number of documents added.
func (b *Builder) Docs() int { return len(b.ids) }

// Tokens is the number of tokens added.
func (b *Builder) Tokens() uint64 { return b.tokens }

// Add adds the document of row id with its tokens, in position order.
// Terms longer than MaxTerm bytes or empty are skipped, but count in
// the document's length.
func (b *Builder) Add(id uint64, toks []Token) {
	b.ids = append(b.ids, id)
	b.tokens += uint64(len(toks))
	norm := EncodeNorm(len(toks))
	if b.seen == nil {
		b.seen = map[string]int{}
	}
	seen := b.seen
	clear(seen)
	for _, t := range toks {
		if len(t.Term) == 0 || len(t.Term) > MaxTerm {
			continue
		}
		acc := b.terms[t.Term]
		if acc == nil {
			acc = &termAcc{}
			b.terms[t.Term] = acc
		}
		if _, ok := seen[t.Term]; !ok {
			seen[t.Term] = len(acc.posts)
			acc.posts = append(acc.posts, Posting{ID: id, Norm: norm})
			acc.start = append(acc.start, uint32(len(acc.pos)))
		}
		acc.posts[seen[t.Term]].TF++
		acc.pos = append(acc.pos, t.Pos)
	}
}

// AddPostings adds a term's postings with their positions (for posting
// i, its TF positions, concatenated), as a segment decoded whole holds
// them; the documents themselves are added with AddDocs.
func (b *Builder) AddPostings(term string, ps []Posting, pos []uint32) {
	acc := b.terms[term]
	if acc == nil {
		acc = &termAcc{}
		b.terms[term] = acc
	}
	at := 0
	for _, p := range ps {
		acc.posts = append(acc.posts, p)
		acc.start = append(acc.start, uint32(len(acc.pos)))
		acc.pos = append(acc.pos, pos[at:at+int(p.TF)]...)
		at += int(p.TF)
	}
}

// AddDocs records documents whose postings AddPostings adds, and their
// tokens.
func (b *Builder) AddDocs(ids []uint64, tokens uint64) {
	b.ids = append(b.ids, ids...)
	b.tokens += tokens
}

// Merge moves o's documents into b; o must not be used after.
func (b *Builder) Merge(o *Builder) {
	b.ids = append(b.ids, o.ids...)
	b.tokens += o.tokens
	for t, oa := range o.terms {
		acc := b.terms[t]
		if acc == nil {
			b.terms[t] = oa
			continue
		}
		base := uint32(len(acc.pos))
		acc.posts = append(acc.posts, oa.posts...)
		for _, s := range oa.start {
			acc.start = append(acc.start, s+base)
		}
		acc.pos = append(acc.pos, oa.pos...)
	}
}

// Encode returns the segment object (docs/format.md §2.9). It panics
// when a row id was added twice (a broken invariant).
func (b *Builder) Encode() []byte {
	terms := make([]string, 0, len(b.terms))
	for t := range b.terms {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	out := append([]byte(Magic), manifest.Major, Minor, KindSeg, 0)
	infos := make([]TermInfo, len(terms))
	order := make([][]int, len(terms))
	for i, t := range terms {
		acc := b.terms[t]
		order[i] = acc.sortedOrder()
		start := len(out)
		var prev uint64
		for _, k := range order[i] {
			p := acc.posts[k]
			out = binary.AppendUvarint(out, p.ID-prev)
			out = binary.AppendUvarint(out, uint64(p.TF))
			out = append(out, p.Norm)
			prev = p.ID
		}
		out = appendCRC(out, start)
		infos[i] = TermInfo{Term: t, DF: len(acc.posts), PostOff: int64(start), PostLen: int64(len(out) - start)}
	}
	p := int64(len(out))
	for i, t := range terms {
		acc := b.terms[t]
		start := len(out)
		for _, k := range order[i] {
			var prev uint32
			for _, pos := range acc.pos[acc.start[k] : acc.start[k]+acc.posts[k].TF] {
				out = binary.AppendUvarint(out, uint64(pos-prev))
				prev = pos
			}
		}
		out = appendCRC(out, start)
		infos[i].PosOff, infos[i].PosLen = int64(start), int64(len(out)-start)
	}
	return b.encodeTail(out, p, infos)
}

// sortedOrder returns the postings' indexes in row-id order.
func (acc *termAcc) sortedOrder() []int {
	order := make([]int, len(acc.posts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(acc.posts[x].ID, acc.posts[y].ID) })
	return order
}

// encodeTail appends the dictionary, block index, docs and footer.
func (b *Builder) encodeTail(out []byte, p int64, infos []TermInfo) []byte {
	d := int64(len(out))
	var blocks []BlockRef
	for lo := 0; lo < len(infos); lo += BlockTerms {
		start := len(out)
		blk := infos[lo:min(lo+BlockTerms, len(infos))]
		out = binary.AppendUvarint(out, uint64(len(blk)))
		prev := ""
		for _, t := range blk {
			shared := 0
			for shared < min(len(prev), len(t.Term)) && prev[shared] == t.Term[shared] {
				shared++
			}
			out = binary.AppendUvarint(out, uint64(shared))
			out = binary.AppendUvarint(out, uint64(len(t.Term)-shared))
			out = append(out, t.Term[shared:]...)
			for _, v := range []int64{int64(t.DF), t.PostOff - header, t.PostLen, t.PosOff - p, t.PosLen} {
				out = binary.AppendUvarint(out, uint64(v))
			}
			prev = t.Term
		}
		out = appendCRC(out, start)
		blocks = append(blocks, BlockRef{First: blk[0].Term, Off: int64(start) - d, Len: int64(len(out) - start)})
	}
	i := int64(len(out))
	out = binary.AppendUvarint(out, uint64(len(blocks)))
	for _, bl := range blocks {
		out = binary.AppendUvarint(out, uint64(len(bl.First)))
		out = append(out, bl.First...)
		out = binary.AppendUvarint(out, uint64(bl.Off))
		out = binary.AppendUvarint(out, uint64(bl.Len))
	}
	out = appendCRC(out, int(i))
	r := int64(len(out))
	out = appendRuns(out, b.runs())
	le := binary.LittleEndian
	f := len(out)
	for _, v := range []int64{p, d, i, r} {
		out = le.AppendUint64(out, uint64(v))
	}
	out = le.AppendUint64(out, b.tokens)
	out = le.AppendUint32(out, uint32(len(b.ids)))
	out = le.AppendUint32(out, uint32(len(infos)))
	out = le.AppendUint32(out, uint32(len(blocks)))
	out = append(out, Magic...)
	out = append(out, manifest.Major, Minor, KindSeg, 0)
	return appendCRC(out, f)
}

// runs returns the documents' row ids as runs.
func (b *Builder) runs() []Run {
	slices.Sort(b.ids)
	var runs []Run
	for i, id := range b.ids {
		if i > 0 && id == b.ids[i-1] {
			panic(fmt.Sprintf("ftsindex: row id %d added twice", id))
		}
		if n := len(runs); n > 0 && runs[n-1].Start+runs[n-1].Len == id {
			runs[n-1].Len++
		} else {
			runs = append(runs, Run{Start: id, Len: 1})
		}
	}
	return runs
}

func appendRuns(out []byte, runs []Run) []byte {
	start := len(out)
	out = binary.AppendUvarint(out, uint64(len(runs)))
	var end uint64
	for _, r := range runs {
		out = binary.AppendUvarint(out, r.Start-end)
		out = binary.AppendUvarint(out, r.Len)
		end = r.Start + r.Len
	}
	return appendCRC(out, start)
}
