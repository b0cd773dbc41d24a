package sqlcat

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/dustin/go-humanize"

	"github.com/lochdata/loch"
)

// optimizeStmt is OPTIMIZE name [WITH (option = value, ...)]: compaction
// of a table (docs/sql.md §4).
type optimizeStmt struct {
	name string
	opts loch.CompactOptions
}

// optimizeOptions are the names OPTIMIZE's WITH accepts.
const optimizeOptions = "target_rows, target_bytes, max_deleted, fanout, dry_run"

func (p *parser) parseOptimize() (*optimizeStmt, error) {
	st := &optimizeStmt{}
	if err := p.expect("optimize"); err != nil {
		return nil, err
	}
	p.accept("table")
	var err error
	if st.name, err = p.name("table"); err != nil {
		return nil, err
	}
	with, err := p.parseWith()
	if err != nil {
		return nil, fmt.Errorf("optimize %s: %w", st.name, err)
	}
	seen := map[string]bool{}
	for _, o := range with {
		if seen[o.name] {
			return nil, fmt.Errorf("optimize %s: option %s given twice: %w", st.name, o.name, loch.ErrInvalidArgument)
		}
		seen[o.name] = true
		if err := st.apply(o); err != nil {
			return nil, err
		}
	}
	return st, p.end()
}

// apply sets one option of WITH.
func (st *optimizeStmt) apply(o option) error {
	bad := func(want string) error {
		return fmt.Errorf("optimize %s: option %s: want %s: %w", st.name, o.name, want, loch.ErrInvalidArgument)
	}
	v := o.value
	switch o.name {
	case "target_rows":
		n, err := strconv.ParseInt(v.text, 10, 64)
		if v.kind != tokNumber || err != nil || n < 1 {
			return bad("a number of rows, 1 or more")
		}
		st.opts.TargetRows = n
	case "target_bytes":
		var n uint64
		var err error
		switch v.kind {
		case tokNumber:
			n, err = strconv.ParseUint(v.text, 10, 64)
		case tokString:
			n, err = humanize.ParseBytes(v.text)
		default:
			err = fmt.Errorf("not a size")
		}
		if err != nil || n < 1 || n > math.MaxInt64 {
			return bad("a number of bytes or a size such as '256MiB'")
		}
		st.opts.TargetBytes = int64(n)
	case "max_deleted":
		f, err := strconv.ParseFloat(v.text, 64)
		if v.kind != tokNumber || err != nil || f <= 0 || f >= 1 {
			return bad("a fraction above 0 and below 1, such as 0.2")
		}
		st.opts.MaxDeleted = f
	case "fanout":
		n, err := strconv.Atoi(v.text)
		if v.kind != tokNumber || err != nil || n == 1 {
			return bad("0 (merge every run) or 2 or more")
		}
		st.opts.Fanout = n
	case "dry_run":
		if v.kind != tokIdent {
			return bad("true or false")
		}
		st.opts.DryRun = v.text == "true"
	default:
		return fmt.Errorf("optimize %s: unknown option %s (known: %s): %w", st.name, o.name, optimizeOptions, loch.ErrInvalidArgument)
	}
	return nil
}

// optimize compacts a table on the session's branch as one commit
// (loch.Dataset.Compact); the Result carries the report.
func (s *Session) optimize(ctx context.Context, st *optimizeStmt, stmt string) (Result, error) {
	res := Result{Statement: "OPTIMIZE", Table: st.name}
	d, err := s.openWrite(ctx, st.name)
	if err != nil {
		return res, fmt.Errorf("optimize %s: %w", st.name, err)
	}
	defer d.Close()
	opts := st.opts
	if opts.Message, err = s.message(stmt); err != nil {
		return res, err
	}
	rep, err := d.Compact(ctx, opts)
	if err != nil {
		return res, fmt.Errorf("optimize %s: %w", st.name, err)
	}
	res.Rows, res.Version, res.Compaction = rep.Rows, rep.Version, rep
	return res, nil
}

// compactionString is the CLI's line for an OPTIMIZE: what it rewrote.
func compactionString(r Result) string {
	c := r.Compaction
	s := "OPTIMIZE " + r.Table
	switch {
	case c.Groups == 0 && c.Yielded > 0:
		s += fmt.Sprintf(": nothing compacted, %d %s changed meanwhile", c.Yielded, plural(c.Yielded, "group", "groups"))
	case c.Groups == 0:
		s += fmt.Sprintf(": nothing to compact (%d %s)", c.FragmentsBefore, plural(c.FragmentsBefore, "fragment", "fragments"))
	default:
		bytes := humanize.IBytes(uint64(c.BytesBefore)) + " -> " + humanize.IBytes(uint64(c.BytesAfter))
		if c.DryRun {
			s += " (dry run, nothing written)"
			bytes = humanize.IBytes(uint64(c.BytesBefore)) + " to rewrite"
		}
		s += fmt.Sprintf(": %d -> %d fragments, %d rows copied, %d deleted %s dropped, %s",
			c.FragmentsBefore, c.FragmentsAfter, c.Rows, c.Dropped, plural(int(c.Dropped), "row", "rows"), bytes)
		if c.Yielded > 0 {
			s += fmt.Sprintf(", %d %s yielded", c.Yielded, plural(c.Yielded, "group", "groups"))
		}
	}
	return s + " (version " + r.Version + ")"
}

// plural is one when n is 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
