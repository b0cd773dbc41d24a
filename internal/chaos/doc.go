// Package chaos is loch's standing robustness campaign (`make chaos`,
// docs/reliability.md): it repeats, with fresh random choices each run,
// what found the bugs of issue 35, and counts how every scenario ended.
//
// Four families of scenarios, each driving the loch CLI as a user would:
//
//   - crash: `kill -9` at a random moment of an ingest (JSON lines, an
//     image folder), a commit of staged writes, SQL DML (INSERT, UPDATE,
//     DELETE), a compaction and a merge. Afterwards the dataset must
//     verify, hold the rows of the version before the write or after it
//     (after it when the command had exited 0: else the commit is lost),
//     and take the next writer.
//   - outage: a MinIO server of the campaign's own stopped at a random
//     moment of an epoch (`loch bench`, and the loader), an ingest and a
//     commit, and started again 1 to 5 s later: with the default retry
//     budget and with a 2 s one. The command succeeds with the right data
//     or fails with an error that says storage failed; the dataset stays
//     sound and loses no acknowledged commit.
//   - damage: every kind of object of a dataset (a catalog's table with
//     deletions, update extensions, saved selections and two vector
//     indexes) and of the catalog, flipped, truncated, deleted and
//     swapped with a sibling of its kind, then read by every reader: the
//     loader, bench, query, show, search, selections, verify and the
//     viewer on the table, and sql, query, verify and the viewer on the
//     catalog. Each reading is compared with the undamaged truth.
//   - fuzz: every fuzz target of the module for a while each.
//
// Each scenario and reader ends in one Outcome: ok (right data, or the
// reader did not need the damaged object), clear error (a refusal naming
// the object or what is wrong), unclear (a refusal that says neither),
// panic, hung, wrong (a success with data that differs from the truth;
// verify saying ok over a damaged reachable object; a dataset unsound or
// unwritable after a crash or an outage) or lost (an acknowledged commit
// gone). The campaign fails when any scenario ends in panic, hung, wrong
// or lost.
//
// Run runs a campaign; it needs testing.TB for the MinIO server of
// internal/testserver, so the campaign is a test, behind the build tag
// chaos so that `go test ./...` leaves it out:
//
//	go test -tags chaos -count=1 -timeout 0 -v -run '^TestCampaign$' ./internal/chaos
//
// Its settings come from the environment (ConfigFromEnv): CHAOS_SEED
// replays a campaign's random choices, CHAOS_N scales the crash, outage
// and damage families, FUZZTIME sets each fuzz target's time,
// CHAOS_FAMILIES picks families and CHAOS_OUT names a file for the table.
// A replay makes the same choices (operations, delays, kinds, mutations,
// offsets, rows); the damaged objects' names differ, as the template's
// commits carry the time they were made, and a kill's delay lands where
// the machine's speed puts it.
package chaos
