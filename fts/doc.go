// Package fts is full-text search over a dataset's text and json columns:
// a BM25 index stored in the dataset as versioned objects
// (docs/format.md §2.9), and the same search without one.
//
// # Analysis
//
// Text becomes terms with bleve's analysis packages (v2.6.3): Unicode
// word segmentation, lower case, English stop words, Snowball English
// stemming. In a json column every string value (not object keys) is
// analysed. A query's words are analysed the same way, so "Cars" finds
// "car".
//
// # Queries
//
//	query   := item { item }        items side by side: any may match, scores add up
//	item    := or
//	or      := and { "OR" and }     either ("||" too)
//	and     := unary { "AND" unary } both ("&&" too)
//	unary   := "NOT" unary | "-" unary | "+" unary | primary
//	primary := WORD | '"' PHRASE '"' | "(" query ")"
//
// Among the items of a query (or of a parenthesised group), +x is
// required, -x and NOT x are excluded, the others optional: the rows
// that hold every required item (or, with none, any optional one) and no
// excluded one match, scored by the sum of the BM25 scores of the items
// they hold. Under AND, NOT x excludes (a AND NOT b); under OR it is an
// error, as is a query of excluded items only. A phrase matches its
// terms at their relative positions (a stop word in it keeps its place
// and matches any word); a word that analyses into several terms
// ("e-mail") is a phrase. A word that is a stop word constrains nothing.
// AND, OR and NOT are operators in capitals only.
//
// # Scoring
//
// BM25 with k1 = 1.2, b = 0.75 and Lucene's idf, ln(1 + (N - n + 0.5) /
// (n + 0.5)); document lengths are quantized to one byte as in Lucene and
// tantivy. Statistics count the rows the segments hold, including rows
// deleted or replaced since a segment was written, until Update merges.
//
// # Index
//
// Build analyses every row into one segment and stores it; Open opens
// the index that serves a version (its own, or its newest ancestor's)
// and analyses the live rows it does not cover (appended or updated
// since) into a segment in memory; deleted rows are never returned.
// Update writes a version's index from the older one, adding a segment of
// the rows it did not cover, or merging all segments into one when too
// many rows are no longer valid. A segment is never loaded whole: a
// search reads its footer, block index and row-id runs once, then a
// constant number of byte ranges per query term, through the chunk cache
// when Options.Cache is set. A stored index that cannot be read is not
// used: Search analyses every row and returns a warning.
//
// # Concurrency
//
// An Index and a Searcher are safe for concurrent use. Build, Update and
// Open analyse rows on Options.Parallelism goroutines, started and
// stopped inside each call.
package fts
