// Package order computes the loader's data order: which rows each rank of a
// data-parallel run receives in each epoch, in which order and in which
// batches. It is a pure function of its inputs: no I/O, no clock, nothing
// that depends on goroutines, caches or backends. This documentation is its
// specification; the Python SDK and `loch order` print exactly the order
// defined here (they call this package, they do not reimplement it), and
// TestGolden pins it.
//
// Plan returns one rank's order for one epoch (an EpochPlan); State and
// Resume save and restore a run mid-epoch, in the same or another world
// size; PlanMix and ResumeMix do the same for a weighted mixture of
// datasets.
//
// # Rows
//
// A dataset's rows are positions 0..N-1, grouped into consecutive blocks
// (Spec.Blocks: chunk-aligned groups of rows; reading a block costs one
// chunk fetch per column). The order arranges a list L of M rows:
// Spec.Subset when it is not nil (positions in the caller's order, each at
// most once), else 0..N-1.
//
// # Random numbers
//
// Every random choice is drawn from a stream named by (seed, epoch,
// stream, index). With all arithmetic modulo 2^64 and
//
//	splitmix(x): z = x + 0x9e3779b97f4a7c15
//	             z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
//	             z = (z ^ z>>27) * 0x94d049bb133111eb
//	             return z ^ z>>31
//	h = splitmix(splitmix(splitmix(splitmix(seed) ^ epoch) ^ stream) ^ index)
//
// the stream is math/rand/v2's PCG seeded with (h, splitmix(h)): a 128-bit
// LCG (state h<<64 | splitmix(h), multiplier
// 0x2360ed051fc65da44385df649fccf645, increment
// 0x5851f42d4c957f2d14057b7ef767814f) whose output is the DXSM mix of each
// new state. below(n) draws x and returns the high 64 bits of x*n (128-bit
// product), drawing x again while the low 64 bits are below (2^64 - n) mod
// n (Lemire's method). To shuffle a list a is to run Fisher-Yates: for
// i = len(a)-1 down to 1, swap a[i] and a[below(i+1)].
//
// The streams: 1, the full-mode permutation (index 0); 2, the block-mode
// block order (index 0); 3, a block-mode window (index: the window's first
// padded position, below); 4, a mixture's draws (index: the stage); 5, a
// mixture dataset's seed (index: the dataset; h itself is the seed).
//
// # The epoch's sequence
//
// Each mode defines a sequence S of the M rows of L:
//
//   - none: S = L.
//   - full: S = L shuffled with stream 1: a uniform random permutation.
//   - block: group b is the rows of L in block b, in L's order; empty
//     groups are dropped and the others numbered 0..G-1 in block order.
//     The list 0..G-1 is shuffled with stream 2, and S is the groups' rows
//     in that order.
//
// # Sharding
//
// With W ranks (WorldSize) and batch size B each rank delivers per rows of
// a padded sequence P:
//
//   - Padding (DropLast false): per = ceil(M/W), and P has W*per rows,
//     P[j] = S[j mod M]: S followed by its start again (repeated when
//     M < W), like PyTorch's DistributedSampler. At most W-1 rows are
//     delivered twice in an epoch (when M >= W), and which rows depends on
//     the shuffle.
//   - DropLast: per = floor(M/(W*B))*B and P = S[0 : W*per]: the last
//     M - W*per rows of S, fewer than W*B, are not delivered this epoch
//     (other rows each epoch when the order is shuffled).
//
// Rank r delivers its range P[r*per : (r+1)*per] in batches of B
// consecutive rows: ceil(per/B) batches, all full but perhaps the last
// (never with DropLast), the same count and the same lengths on every
// rank. Sharding after shuffling gives a rank other rows each epoch; giving
// each rank a contiguous range, not every W-th row, lets it read whole
// blocks in block mode: only a block cut by the ends of two ranges, or
// repeated by the padding, is read by two ranks.
//
// # Windows
//
// A rank's range is cut into windows: consecutive runs of its delivery
// indices of R rows, R being max(WindowRows, 1) rounded up to a multiple of
// B (WindowRows 0 means DefaultWindowBlocks times the largest block), the
// last window of the range shorter. A window is whole batches: no batch
// spans two. In none and full modes a rank delivers its range in order. In
// block mode the rows of each window are delivered shuffled: the window
// that starts at padded position j is shuffled with stream 3, index j.
//
// A window is the unit a loader reads and prefetches, and the unit that
// data-loading workers sharing a rank's batches divide among themselves:
// in block mode its rows are the rows of a run of consecutive groups of S
// (whole blocks but at its two ends), so a loader needs only those blocks;
// there is no shuffle buffer to fill before the first batch. Blocks move
// as far as rows do in a full shuffle; what stays of the stored order is
// that a window's rows come from about R/(block rows) blocks. With
// N = 100,000, blocks of 100 rows and windows of 16 blocks
// (TestShuffleQuality):
//
//	        mean |displacement|/N   lag-1 correlation   neighbours in one block
//	none    0                       1                   0.99
//	block   0.338                   0.074               0.062
//	full    0.334                   0.003               0.001
//
// A loader makes blocks small (a few hundred KiB of a dataset's largest
// column) and windows of a few hundred blocks, so that a batch's rows come
// from about as many blocks as it has rows.
//
// # Resuming
//
// A State is the epoch and its stages: the parts of the epoch run under one
// world size and batch size, with the batches each rank delivered in each
// (all ranks deliver the same number in synchronous training).
//
// A State also records the Seed and the Setup: the shuffle mode,
// WindowRows (block mode only), DropLast and the Spec's Selection (an
// opaque name of the row subset); Resume refuses a State whose Version,
// Seed or Setup differs from the Spec's, naming the first field that does
// with both values. World size and batch size are free to change (a new
// stage, below); Rank is any of the new world's. The State's Epoch is
// where it is, like its stages, and replaces the Spec's (a State taken at
// an epoch's end is the next epoch's start).
//
// Resumed under the world size and batch size of its last stage, the plan
// continues that stage: each rank delivers its range from batch
// BatchesDone on, exactly the batches of the uninterrupted run, padding
// included.
//
// Resumed under another world size W' or batch size B', a new stage
// spreads the rest of the epoch over the new ranks. Its sequence is made
// from the previous stage: for its ranks 0, 1, ..., W-1 in turn, the rows
// of the rank's range after its first BatchesDone*B, in the rank's
// delivery order, keeping neither a row that some rank delivered in that
// stage (a padded repeat counts as its row) nor a second copy of a row.
// That sequence is sharded as above with W', B' and DropLast (padded with
// its own start, or cut), and each new rank delivers its range in order:
// the rows keep their shuffled order and are not shuffled again. Thus the
// rows delivered before and after the change are every row of the epoch's
// first stage once, but for the padding of each stage (fewer than W' more
// rows per change when the rest has at least W' rows) or, with DropLast,
// fewer than W'*B' more rows dropped per change. A later stage's windows
// are cut from its ranges as in the first stage (with B'), and are not
// shuffled.
//
// Later epochs are ordinary plans with the new world size. Resuming a
// state with more than one stage, or in another world size or batch size,
// replays the stages from the epoch's start: O(M) time and memory.
//
// # Mixtures
//
// A mixture draws each row from one of D datasets (MixSpec.Parts) in
// proportion to their weights, made integers u_d in the same proportions:
// the weights' shortest decimal forms at a common power of ten (0.7 and
// 0.3 are 7 and 3) when each fits in 53 bits and their sum in 62, else
// round(w_d * 2^k) with k making the largest weight 2^40 to 2^41. U is
// their sum.
//
// Dataset d's rows on a rank are a stream of cycles 0, 1, 2, ...: cycle c
// is the order of one dataset defined above (the dataset's Blocks, Subset,
// Mode, WindowRows and DropLast; seed h(seed, epoch, 5, d) where h is the
// key above; epoch c; the mixture's world size and rank; batch size 1). A
// row drawn from dataset d is the next row of its stream; a dataset that
// runs out starts its next cycle, a new shuffle.
//
// An epoch has T rows per rank: ceil(EpochRows/W) when EpochRows is set,
// else the largest over the datasets of positive weight of
// ceil(R_d * U / u_d), R_d being the rows per rank of one of its cycles.
// So by default the epoch ends when the dataset with the largest size over
// weight has delivered each of its rows once, and the others have cycled
// (HuggingFace's "all_exhausted"). The dataset of each of the T rows is
// fixed by a draw: quota q_d = floor(T*u_d/U), plus one for the T - sum(q)
// datasets with the largest remainders T*u_d mod U (the lower index first
// among equals); the list of q_0 zeros, q_1 ones, ... shuffled with stream
// 4, index 0, gives row t's dataset. Every rank draws the same datasets, so
// the datasets' cycles stay aligned across ranks and every rank has the
// same batches: of B consecutive rows, the last short, or with DropLast
// floor(T/B) full ones. Each epoch starts every dataset at cycle 0 afresh.
//
// A mixture's State has stages as for one dataset, counting the mixture's
// batches, and a Setup of mode "mix" with the weights, EpochRows, DropLast
// and each dataset's Setup (Parts); resumed under the last stage's world size and batch size the
// plan continues it exactly. Under another, after the previous stage's
// ranks delivered k rows each of the T they deliver (whole batches only
// with DropLast), the new stage has ceil((T-k)*W/W') rows per rank (the rows left, over the new ranks), its
// quotas apportioned as above by the counts of each dataset among the
// draws left, shuffled with stream 4, index the stage's number. Each
// dataset's stream resumes where it was: the rest of its current cycle
// spread over the new ranks as for one dataset, then new cycles.
//
// # Memory
//
// A plan holds O(blocks) memory in none and block modes (plus a copy of
// the subset in block mode: 8 bytes per row); in full mode 4 bytes per row
// it delivers (8 above 2^32 rows), after building the epoch's permutation
// at 4 bytes per row of the epoch; 2 bytes per row per rank for a
// mixture's draws; and after a change of world size or batch size within
// the epoch, 12 to 16 bytes per row of the epoch. Streaming a plan
// (EpochPlan.All) holds one window and one batch; EpochPlan.Batch shuffles
// the window(s) its batch lies in at each call.
package order
