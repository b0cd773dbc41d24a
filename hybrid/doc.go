// Package hybrid is hybrid search over a dataset: a nearest-neighbour
// query over an embedding column (package vector) and a full-text query
// over a text or json column (package fts), each restricted to the rows a
// filter allows, answered through the columns' indexes where they exist,
// and their two rankings fused into one (docs/search.md, "Hybrid
// search").
//
// # Fusion
//
// Each side returns its Window best rows (default k). Reciprocal rank
// fusion (RRF, the default, as LanceDB and Elasticsearch) scores a row
// sum over the lists that hold it of 1 / (rrf_k + rank), ranks from 1,
// rrf_k = 60 unless set. Weighted fusion normalises each list's scores to
// [0, 1] by min-max over the list (a distance d becomes (max - d) / (max
// - min), nearest 1; a BM25 score s becomes (s - min) / (max - min),
// best 1; a list whose scores are all equal scores 1) and scores a row w
// x vector + (1 - w) x text, a list that does not hold the row adding 0.
// Rows are ordered by fused score, then by their best rank in either
// list, then by row id, and the first k are the answer. Either query may
// be left out: the answer is then the other side's ranking, scored the
// same way.
//
// # Filters
//
// Options.Allow (the rows an SQL condition passes: query.Filter makes
// them; this package does not import the SQL engine, so that the C ABI
// can use it) is given to both searches, which apply it before their top
// rows are taken: no row it rejects is returned.
//
// # Selections
//
// Result.Selection makes the answer a loch.Selection (rows in fused
// order, the SQL of the same search with the hybrid_search table
// function as its text): the loader streams it and SaveSelection keeps
// it, like any query's result.
package hybrid
