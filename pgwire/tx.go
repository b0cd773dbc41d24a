package pgwire

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Transactions (docs/pg.md): BEGIN opens one in the connection's sqlcat
// session, whose writes, to one table, COMMIT makes one commit and
// ROLLBACK discards (sqlcat.Session.Begin). ReadyForQuery reports 'T'
// inside it and 'E' after an error in it, when, as in PostgreSQL, every
// statement but COMMIT and ROLLBACK is refused, and COMMIT rolls back.

// errTxAborted refuses a statement after an error in a transaction.
var errTxAborted = errors.New("current transaction is aborted, commands ignored until end of transaction block")

// txStatement runs the transaction statements (w: q's first two words)
// and refuses every other statement in a failed transaction; ok is false
// for a statement exec runs as usual.
func (c *conn) txStatement(ctx context.Context, w []string) (res *result, ok bool, err error) {
	switch w[0] {
	case "begin", "start":
		if !c.sess.Begin() {
			c.warn("25001", "there is already a transaction in progress")
		}
		if c.txStatus != 'E' {
			c.txStatus = 'T'
		}
		return tagResult("BEGIN"), true, nil
	case "commit", "end":
		if w[1] == "prepared" {
			return nil, true, fmt.Errorf("COMMIT PREPARED is not supported by loch: %w", errUnsupported)
		}
		return c.endTx(ctx, true)
	case "rollback", "abort":
		if w[1] == "to" || w[1] == "prepared" {
			return nil, true, fmt.Errorf("ROLLBACK %s is not supported by loch (no savepoints): %w", w[1], errUnsupported)
		}
		return c.endTx(ctx, false)
	}
	if c.txStatus == 'E' {
		return nil, true, errTxAborted
	}
	return nil, false, nil
}

// endTx runs COMMIT (commit) or ROLLBACK; a COMMIT of a failed
// transaction rolls it back, and says ROLLBACK.
func (c *conn) endTx(ctx context.Context, commit bool) (*result, bool, error) {
	if !c.sess.InTransaction() {
		c.warn("25P01", "there is no transaction in progress")
	}
	failed := c.txStatus == 'E'
	c.txStatus = 'I'
	if !commit || failed {
		if err := c.sess.Rollback(ctx); err != nil {
			return nil, true, err
		}
		return tagResult("ROLLBACK"), true, nil
	}
	r, err := c.sess.Commit(ctx)
	if err != nil {
		return nil, true, err
	}
	if r.Version != "" {
		c.srv.logf("user %s: COMMIT %s (version %s)", c.user, r.Table, r.Version)
	}
	return tagResult("COMMIT"), true, nil
}

// warn sends a WARNING notice.
func (c *conn) warn(code, msg string) {
	c.be.Send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: code, Message: msg})
}
