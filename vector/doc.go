// Package vector is nearest-neighbour search over a dataset's embedding
// columns: exact search, streaming the column's chunks through the
// engine's read path (loch.Scan) on all cores, and IVF indexes stored in
// the dataset as versioned objects: IVF-flat (docs/format.md §2.8) and
// IVF-PQ (§2.8.1, BuildOptions.Kind), whose lists stay in storage.
//
// # Columns and metrics
//
// A searchable column has a fixed 1-D shape [d] and dtype float32,
// float16 or bfloat16 (float16 and bfloat16 are widened to float32). A
// row whose sample is null is never a result. Distances, smaller is
// nearer, as DuckDB names them: Cosine is 1 - cos(x, q)
// (array_cosine_distance), L2 the Euclidean distance (array_distance),
// Dot the negated inner product (array_negative_inner_product). A zero
// vector has cosine distance 1 to everything.
//
// # Results
//
// A search returns, for each query vector, up to k hits ordered by
// distance and then by row id (so equal distances give one answer), each
// with the row's stable id (loch.Scan.Positions maps ids to positions).
// Fewer than k come back only when fewer rows pass: a filter
// (Options.Allow) is applied before the top k is taken, never after.
//
// # Index
//
// Build trains an index for one column, metric and version and stores
// it; Open loads the index that covers a version (its own, or its newest
// ancestor's) and answers searches from the index and an exact scan of
// the rows the index does not cover (appended, updated or undeleted since
// it was built). Build runs the four steps of a distributed build in one
// process, in bounded memory (Train, EncodePart per part of the rows,
// MergeLists, Commit: see parts.go); the steps can also run in separate
// processes, as python/loch/ray.py's create_index runs them. Deleted rows are never returned. Update folds a newer
// version's uncovered rows into the lists without retraining. Search
// (and a Searcher, which keeps opened indexes between calls) uses the
// index when one serves the version and exact search otherwise, also when
// the stored index cannot be read (with a warning). An opened ivf-flat
// index is held in memory (about the size of the raw float32 vectors); an
// ivf-pq index holds its centroids and codebook (and, opened for a later
// version than its own, a bitmap of the valid rows) and reads the heads of
// the lists a query probes and the vectors it re-ranks by range, through
// Options.Cache when set; exact search needs a few chunks per goroutine.
//
// # Filters
//
// With a filter that allows a share s of the rows an index search scans
// nprobe/s lists for allowed rows, then more until it has k: as many
// allowed rows are compared as rows without a filter, and a narrow filter
// (s under nprobe/nlist) scans every list, which is exact.
//
// # Concurrency
//
// Searches run on Options.Parallelism goroutines (default GOMAXPROCS),
// started and stopped inside each call. An Index is safe for concurrent
// searches once opened.
package vector
