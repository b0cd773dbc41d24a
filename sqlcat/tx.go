package sqlcat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
)

// TxBranchPrefix starts the name of the branch a transaction writes on
// (docs/pg.md, transactions). A branch of this name that outlives its
// session (a server killed mid-transaction) holds only uncommitted
// writes; loch branch delete removes it.
const TxBranchPrefix = "loch-tx/"

// tx is a session's open transaction (Begin). Its writes go to one
// table, on a branch of their own made from the session's branch at the
// first write; the statements of the transaction read that table there,
// so they see their own writes, and every other table as outside it.
// Commit merges the branch into the session's branch as one commit;
// Rollback deletes it.
type tx struct {
	table  string // the table written, as the catalog spells it ("" before the first write)
	branch string // the transaction's branch of table
	base   string // the session's branch it was made from, which Commit merges into ("" for main)
	writes int
}

// ErrTxTable marks a write, in a transaction, to a second table, or a
// change of the table or branch a transaction writes: loch commits
// each table on its own, so it cannot make writes to two tables atomic.
var ErrTxTable = fmt.Errorf("a transaction writes one table: %w", loch.ErrInvalidArgument)

// Begin opens a transaction (BEGIN): the write statements until Commit
// or Rollback become one commit of their table, visible to others at
// Commit, and Rollback discards them. It reports false, changing
// nothing, when a transaction is already open. DDL (CREATE, ALTER, DROP
// TABLE of another table) and OPTIMIZE take effect at once, as outside a
// transaction.
func (s *Session) Begin() bool {
	if s.tx != nil {
		return false
	}
	s.tx = &tx{}
	return true
}

// InTransaction reports whether a transaction is open.
func (s *Session) InTransaction() bool { return s.tx != nil }

// txCheck is called before a statement of kind on table target runs in
// an open transaction: the first write makes the transaction's branch of
// target; a write to another table, or DDL of the transaction's table,
// is refused.
func (s *Session) txCheck(ctx context.Context, kind, target string) error {
	t := s.tx
	switch kind {
	case "INSERT", "UPDATE", "DELETE", "MERGE":
	case "ALTER TABLE", "DROP TABLE", KindBranchMerge:
		if t.table != "" && strings.EqualFold(target, t.table) {
			return fmt.Errorf("sql: %s %s inside a transaction that writes %s: COMMIT or ROLLBACK first: %w", kind, target, t.table, ErrTxTable)
		}
		return nil
	default:
		return nil
	}
	if t.table != "" {
		if !strings.EqualFold(target, t.table) {
			return fmt.Errorf("sql: %s %s inside a transaction that writes %s: loch commits each table on its own and cannot make writes to two tables atomic; COMMIT (or ROLLBACK) first, then write %s: %w",
				kind, target, t.table, target, ErrTxTable)
		}
		return nil
	}
	d, err := s.openWrite(ctx, target)
	if err != nil {
		return fmt.Errorf("%s %s: %w", strings.ToLower(kind), target, err)
	}
	defer d.Close()
	name := TxBranchPrefix + randomHex()
	if _, err := d.CreateBranch(ctx, name, ""); err != nil {
		return fmt.Errorf("%s %s: start the transaction's branch: %w", strings.ToLower(kind), target, err)
	}
	tb, err := s.cat.Table(ctx, target)
	if err != nil {
		return err
	}
	t.table, t.branch, t.base = tb.Name, name, s.Branch
	return nil
}

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Commit ends the transaction: its writes become one commit of their
// table on the session's branch (a merge commit of the transaction's
// branch, also when no other writer moved the table meanwhile). When
// another writer changed the same rows, nothing is committed and the
// error wraps loch.ErrConflict. The transaction ends either way. Without
// a transaction, or one that wrote nothing, Commit does nothing.
func (s *Session) Commit(ctx context.Context) (Result, error) {
	t := s.tx
	res := Result{Statement: "COMMIT"}
	if t == nil || t.table == "" {
		s.tx = nil
		return res, nil
	}
	res.Table = t.table
	s.tx = nil // openWrite opens the session's branch again
	defer deleteTxBranch(ctx, s, t)
	if s.Branch != t.base { // SET loch_branch is refused after a write: not expected
		return res, fmt.Errorf("commit: the session's branch moved from %q to %q during the transaction; nothing committed: %w", t.base, s.Branch, ErrTxTable)
	}
	d, err := s.openWrite(ctx, t.table)
	if err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	defer d.Close()
	msg := s.Message
	if msg == "" {
		msg = fmt.Sprintf("transaction: %d %s", t.writes, plural(t.writes, "write", "writes"))
	}
	m, err := d.Merge(ctx, t.branch, loch.MergeOptions{Message: msg, NoFastForward: true})
	if err != nil {
		return res, fmt.Errorf("commit the transaction's writes to %s: %w", t.table, err)
	}
	res.Version = m.Commit
	res.Rows = m.Added + m.Deleted + m.Modified
	return res, nil
}

// Rollback ends the transaction, discarding its writes. Without a
// transaction it does nothing.
func (s *Session) Rollback(ctx context.Context) error {
	t := s.tx
	s.tx = nil
	if t == nil {
		return nil
	}
	return deleteTxBranch(ctx, s, t)
}

// deleteTxBranch deletes t's branch, if it made one.
func deleteTxBranch(ctx context.Context, s *Session, t *tx) error {
	if t.branch == "" {
		return nil
	}
	d, err := s.cat.OpenTable(ctx, t.table)
	if errors.Is(err, loch.ErrNotFound) {
		return nil // the table was dropped, and its branches with it
	}
	if err != nil {
		return fmt.Errorf("end the transaction on %s: %w", t.table, err)
	}
	defer d.Close()
	if err := d.DeleteBranch(ctx, t.branch); err != nil {
		return fmt.Errorf("end the transaction on %s: delete branch %s: %w", t.table, t.branch, err)
	}
	return nil
}
