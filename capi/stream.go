package main

/*
#include <sys/ioctl.h>
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A loader's batches over a pair of pipes (ABI 13, loch_loader_stream).
//
// Each call into Go from a thread that Go did not start costs the thread a
// Go processor (P) to find, which it then holds in the system-call state
// while the caller runs its own code, and a wait for a batch parks that
// thread inside the Go scheduler. A consumer that reads its batches from a
// pipe makes no call into Go per batch: a goroutine (the feeder) takes
// each batch from the loader, as `loch bench`'s consumer does, and writes
// its description's address to the pipe; the caller reads it, blocking in
// the kernel when none is there. The caller tells Go which descriptions it
// is done with and which sample buffers it has freed over a second pipe,
// which the feeder reads, without waiting, before it takes each batch (and
// waits on only when the bounds below hold it back), so that a report
// wakes no thread of Go's. bench/RESULTS.md (issue 17) has the
// measurements.
//
// Records are 16 bytes in native byte order: a kind (int64) and a value
// (uint64).
//
//	Go -> caller (the batch pipe):
//	  LOCH_STREAM_BATCH, the address of a loch_batch
//	  LOCH_STREAM_END, the status that ended the stream: LOCH_EOF at the
//	      end of the epoch, else an error (loch_loader_stream_end gives its
//	      message). Nothing follows it.
//	  LOCH_STREAM_WAITING, 0: Go waits for reports to send the next batch
//	caller -> Go (the report pipe):
//	  LOCH_STREAM_DONE, the address of a loch_batch the caller has read
//	      (Go frees the description; its sample buffers stay the caller's)
//	  LOCH_STREAM_FREED, the address of a sample buffer the caller gives
//	      back (as loch_buffer_free)
//	  LOCH_STREAM_RETURN, the address of a loch_batch the caller read and
//	      will not use (Go frees it with its sample buffers)
//
// At most depth batches are taken from the loader and not yet reported
// done or returned, and while more than one is, their sample bytes are
// under a quarter of the loader's prefetch_bytes (so that batches waiting
// for the caller add at most that to the memory the loader bounds). When
// that holds Go back, it writes LOCH_STREAM_WAITING first: the caller
// must then report the batches it is done with. A caller that stops early
// returns the batches it read and will not use before loch_loader_close;
// close takes back those it never read. A description the caller read and
// did not report stays valid after close, until the caller frees it
// (loch_batch_free, and its buffers with loch_buffer_free when it did not
// take them): so a close from another thread never frees one in use.
//
// A caller that reads faster than the loader makes batches finds the pipe
// empty and wakes for each batch. With $LOCH_STREAM_GROUP=N (N > 1) Go
// instead holds batches back and writes up to N records in one write (see
// hold), for at most 5 ms, never the stream's first N and never more than
// the bounds above allow; the stream's end writes what is held first.
// That saves the caller's CPU on a host with few cores, but delays
// batches: by default each batch is written as it comes (bench/RESULTS.md,
// issue 17: on 16 cores groups of 4 cost ds.pytorch() about 2% of its
// throughput, and on 2 they gained nothing measurable).

const recordSize = 16

// stream is a loader's stream state.
type stream struct {
	lo      *loaderObj
	out     *os.File      // write end of the batch pipe
	drain   int           // Go's read end of the batch pipe: close takes back what the caller did not read
	in      int           // read end of the report pipe (non-blocking): the feeder reads it, then close
	buf     []byte        // the feeder's, then close's: report records read
	have    int           // bytes in buf
	depth   int           // most batches sent and not reported
	limit   int64         // most bytes of them, unless there is only one
	group   int           // most batches the feeder holds back to write together (hold)
	holdFor time.Duration // and for how long at most
	batches int           // the feeder's: batches taken from the loader

	ctx    context.Context // ended by close
	cancel context.CancelFunc

	mu    sync.Mutex
	sent  map[*C.loch_batch]int64 // written and not reported: their sample bytes
	bytes int64                   // the sum of sent
	end   error                   // what ended the feeder: io.EOF or an error

	fed chan struct{} // closed when the feeder has stopped
}

// loch_loader_stream switches the loader to streaming (see the records
// above) and stores the caller's ends of the two pipes: *batch_fd to read
// records from, *report_fd to write records to. Both are blocking file
// descriptors that the caller closes after loch_loader_close. depth (>= 1)
// bounds the batches taken and not reported done. After it, loch_loader_next
// and loch_loader_next_batch fail with LOCH_INVALID_ARGUMENT.
//
//export loch_loader_stream
func loch_loader_stream(h C.uintptr_t, depth C.int64_t, batchFD, reportFD *C.int, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		if depth < 1 {
			return invalidf("stream depth %d: want at least 1", int64(depth))
		}
		lo.mu.Lock()
		defer lo.mu.Unlock()
		if lo.closed.Load() {
			return fmt.Errorf("loader is closed: %w", errClosed)
		}
		if lo.stream.Load() != nil {
			return invalidf("loader is already streaming")
		}
		s, callerBatch, callerReport, err := newStream(lo, int(depth))
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		lo.stream.Store(s)
		*batchFD, *reportFD = C.int(callerBatch), C.int(callerReport)
		go s.feed()
		return nil
	})
}

// newStream makes the two pipes; it returns the stream and the caller's
// two file descriptors.
func newStream(lo *loaderObj, depth int) (*stream, int, int, error) {
	b, err := pipe()
	if err != nil {
		return nil, 0, 0, err
	}
	r, err := pipe()
	if err != nil {
		unix.Close(b[0])
		unix.Close(b[1])
		return nil, 0, 0, err
	}
	// The caller's ends stay blocking. Go's ends are separate open files
	// (a pipe's two ends do not share their flags); its report end is
	// non-blocking, read by the feeder when it is about to take a batch,
	// and not in Go's poller: a report wakes no thread of Go's.
	callerBatch, err := unix.FcntlInt(uintptr(b[0]), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(r[0], true)
	}
	if err != nil {
		for _, fd := range []int{b[0], b[1], r[0], r[1]} {
			unix.Close(fd)
		}
		return nil, 0, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{
		ctx:     ctx,
		cancel:  cancel,
		lo:      lo,
		out:     os.NewFile(uintptr(b[1]), "loch batch pipe"),
		drain:   b[0],
		in:      r[0],
		buf:     make([]byte, 256*recordSize),
		depth:   depth,
		limit:   max(lo.prefetchBytes/4, 1),
		group:   streamGroup(depth),
		holdFor: streamHold(),
		sent:    map[*C.loch_batch]int64{},
		fed:     make(chan struct{}),
	}
	return s, callerBatch, r[1], nil
}

// streamGroup is the most batches the feeder holds back: 1 (no groups),
// or $LOCH_STREAM_GROUP, read when the stream starts, at most the depth.
func streamGroup(depth int) int {
	if v, err := strconv.Atoi(os.Getenv("LOCH_STREAM_GROUP")); err == nil && v >= 1 {
		return min(v, depth)
	}
	return 1
}

// streamHold is how long at most the feeder holds a batch back:
// defaultHold, or $LOCH_STREAM_HOLD (a Go duration, such as "1ms"), for
// measurements and tests.
func streamHold() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LOCH_STREAM_HOLD")); err == nil && d > 0 {
		return d
	}
	return defaultHold
}

// pipe makes a pipe whose descriptors are closed on exec (as os.Pipe
// does where there is no pipe2).
func pipe() ([2]int, error) {
	var p [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p[:]); err != nil {
		return p, err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return p, nil
}

// feed takes the loader's batches and writes them to the batch pipe, then
// the record that ends the stream.
func (s *stream) feed() {
	defer close(s.fed)
	var held []*C.loch_batch // taken and not written yet (see hold)
	var heldAt time.Time     // when the first of them was taken
	flush := func() error {
		err := s.write(held)
		if err != nil { // the caller's end is closed: no one reads them
			s.forget(held)
		}
		held = held[:0]
		return err
	}
	defer flush() //nolint:errcheck // stopped with batches held: close takes them back from the pipe
	for {
		open := s.reports()
		if len(held) > 0 && !s.hold(held) {
			if err := flush(); err != nil {
				s.stop(fmt.Errorf("write to the batch pipe: %w", err))
				return
			}
		}
		if !s.waitRoom(open) {
			s.stop(fmt.Errorf("loader is closed: %w", errClosed))
			return
		}
		ctx, cancel := s.ctx, context.CancelFunc(func() {})
		if len(held) > 0 {
			ctx, cancel = context.WithDeadline(s.ctx, heldAt.Add(s.holdFor))
		}
		s.lo.mu.Lock()
		b, err := s.lo.l.Next(ctx)
		s.lo.mu.Unlock()
		cancel()
		if err != nil && len(held) > 0 && errors.Is(err, context.DeadlineExceeded) && s.ctx.Err() == nil {
			// Held long enough: the caller gets them now.
			if err := flush(); err != nil {
				s.stop(fmt.Errorf("write to the batch pipe: %w", err))
				return
			}
			continue
		}
		if err != nil {
			if s.ctx.Err() != nil {
				err = fmt.Errorf("loader is closed: %w", errClosed)
			}
			s.stop(err)
			flush() //nolint:errcheck // as below
			code := C.LOCH_EOF
			if !errors.Is(err, io.EOF) {
				code = int(status(err))
			}
			s.put(C.LOCH_STREAM_END, uint64(code)) //nolint:errcheck // a caller that stopped reading: close cleans up
			return
		}
		cb := s.lo.cBatch(b)
		var n int64
		for _, t := range unsafe.Slice(cb.cols, int(cb.ncols)) {
			n += int64(t.nbytes)
		}
		s.mu.Lock()
		s.sent[cb] = n
		s.bytes += n
		s.mu.Unlock()
		s.batches++
		if len(held) == 0 {
			heldAt = time.Now()
		}
		held = append(held, cb)
	}
}

// defaultHold is the longest the feeder holds a batch back (hold): a
// loader slower than that makes no groups, and its caller gets each batch
// as it comes.
const defaultHold = 5 * time.Millisecond

// hold reports whether the feeder should keep the held batches back to
// write them together with the next: so that a caller that reads faster
// than the loader makes batches wakes once for several of them instead of
// once for each (on a virtual machine a wake-up across cores costs tens
// of microseconds of both sides' CPU; bench/RESULTS.md, issue 17). It
// holds only while the pipe is empty (the caller has read everything:
// it waits, or soon will; a caller that is behind reads without waiting,
// and gets each batch at once), after the first group of the stream (no
// wait for the first batch), while fewer than a group are held, while
// another batch may be sent without waiting for reports, and for at most
// holdFor.
func (s *stream) hold(held []*C.loch_batch) bool {
	if s.group <= 1 || len(held) >= s.group || s.batches <= s.group {
		return false
	}
	// The bytes in the pipe, which the caller has not read.
	if n, err := unix.IoctlGetInt(s.drain, C.FIONREAD); err != nil || n > 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent) < s.depth && s.bytes < s.limit
}

// write writes the records of the batches in one write (a pipe keeps a
// write of at most PIPE_BUF bytes whole).
func (s *stream) write(batches []*C.loch_batch) error {
	if len(batches) == 0 {
		return nil
	}
	rec := make([]byte, 0, len(batches)*recordSize)
	for _, cb := range batches {
		rec = appendRecord(rec, C.LOCH_STREAM_BATCH, uint64(uintptr(unsafe.Pointer(cb))))
	}
	_, err := s.out.Write(rec)
	return err
}

// appendRecord appends the record (kind, v) to rec.
func appendRecord(rec []byte, kind int, v uint64) []byte {
	return binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(rec, uint64(kind)), v)
}

// forget frees batches taken and never written, whole.
func (s *stream) forget(batches []*C.loch_batch) {
	for _, cb := range batches {
		if s.reported(cb) {
			freeWhole(cb)
		}
	}
}

// waitRoom waits, unless another batch may be sent (fewer than depth are
// sent and not reported, and their bytes are under the limit, or none is
// left), for the caller's reports that make room; open is false when the
// caller's end of the report pipe is closed. It reports false when close
// ended the wait.
func (s *stream) waitRoom(open bool) bool {
	if !s.full() {
		return s.ctx.Err() == nil
	}
	// Ask the caller for its reports: it may be waiting for a batch with
	// reports it holds back.
	if err := s.put(C.LOCH_STREAM_WAITING, 0); err != nil {
		return false
	}
	for open && s.full() {
		// Wait for a report, and look at ctx (close) now and then.
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(s.in), Events: unix.POLLIN}}, 10); err != nil && err != unix.EINTR {
			open = false // the pipe cannot be waited on: as if no report could come
			break
		}
		open = s.reports()
	}
	if !open { // the caller's end is closed: no report will come, and no batch may go
		<-s.ctx.Done()
	}
	return s.ctx.Err() == nil
}

// full reports whether the sent batches leave no room for another, while
// the stream runs.
func (s *stream) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx.Err() == nil && (len(s.sent) >= s.depth || (len(s.sent) > 0 && s.bytes >= s.limit))
}

// reports acts on the caller's records waiting in the report pipe, without
// waiting for more: descriptions done (freed; each makes room for one
// batch more) and sample buffers given back. A record of another kind is
// ignored. It reports false once the caller has closed its end. The
// feeder's, then close's once the feeder has stopped.
func (s *stream) reports() bool {
	for {
		n, err := unix.Read(s.in, s.buf[s.have:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil: // EAGAIN: nothing waiting
			return true
		case n == 0:
			return false
		}
		s.take(n)
	}
}

// reported takes a reported batch off the sent ones, making room; it
// reports false for an address that was not sent or was reported before.
func (s *stream) reported(cb *C.loch_batch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.sent[cb]
	if ok {
		delete(s.sent, cb)
		s.bytes -= n
	}
	return ok
}

// put writes one record to the batch pipe (16 bytes: one write, which a
// pipe keeps whole).
func (s *stream) put(kind int, v uint64) error {
	_, err := s.out.Write(appendRecord(make([]byte, 0, recordSize), kind, v))
	return err
}

// stop records what ended the feeder (the first reason only).
func (s *stream) stop(err error) {
	s.mu.Lock()
	if s.end == nil {
		s.end = err
	}
	s.mu.Unlock()
}

// take acts on the whole records among the n bytes read into buf after
// the have bytes of a record read in part before.
func (s *stream) take(n int) {
	s.have += max(n, 0)
	var freed []unsafe.Pointer
	s.have = eachRecord(s.buf[:s.have], func(kind uint64, v unsafe.Pointer) {
		switch kind {
		case C.LOCH_STREAM_DONE:
			if cb := (*C.loch_batch)(v); s.reported(cb) { // not a stranger's pointer, nor one reported twice
				freeBatch(cb)
			}
		case C.LOCH_STREAM_RETURN:
			if cb := (*C.loch_batch)(v); s.reported(cb) {
				freeWhole(cb)
			}
		case C.LOCH_STREAM_FREED:
			if v != nil {
				freed = append(freed, v)
			}
		}
	})
	if len(freed) > 0 {
		pool.releaseAll(freed)
	}
}

// eachRecord calls f with each whole record in buf, moves the bytes of a
// record cut short to the start of buf and returns their count.
func eachRecord(buf []byte, f func(kind uint64, v unsafe.Pointer)) int {
	whole := len(buf) - len(buf)%recordSize
	for i := 0; i < whole; i += recordSize {
		f(binary.NativeEndian.Uint64(buf[i:]), recordPointer(buf[i:]))
	}
	return copy(buf, buf[whole:])
}

// close stops the stream: the feeder first, then takes the reports the
// caller wrote before; the batches written and never read
// are taken back (descriptions and buffers). What the caller read and did
// not report stays the caller's. Called with lo.mu not held.
func (s *stream) close() {
	s.cancel()
	<-s.fed
	s.out.Close()
	// The records the caller wrote before close.
	s.reports()
	unix.Close(s.in)
	unread := drainBatches(s.drain)
	unix.Close(s.drain)
	for _, cb := range unread {
		if _, ok := s.sent[cb]; !ok {
			continue
		}
		delete(s.sent, cb)
		freeWhole(cb)
	}
	// The rest the caller read: theirs to report before close or to free
	// (loch_batch_free) after it.
	s.sent = nil
}

// freeWhole frees a batch that the caller did not take: its description
// and its sample buffers.
func freeWhole(cb *C.loch_batch) {
	for _, t := range unsafe.Slice(cb.cols, int(cb.ncols)) {
		if t.data != nil {
			pool.release(unsafe.Pointer(t.data))
		}
	}
	freeBatch(cb)
}

// recordPointer is the value of the record at rec as the C address it is.
func recordPointer(rec []byte) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&rec[8]))
}

// drainBatches reads the records waiting in the pipe at fd (a blocking
// descriptor), without waiting for more, and returns their batches.
func drainBatches(fd int) []*C.loch_batch {
	var out []*C.loch_batch
	buf := make([]byte, 256*recordSize)
	var have int
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		m, err := unix.Read(fd, buf[have:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		have = eachRecord(buf[:have+m], func(kind uint64, v unsafe.Pointer) {
			if kind == C.LOCH_STREAM_BATCH {
				out = append(out, (*C.loch_batch)(v))
			}
		})
	}
	return out
}

// loch_loader_stream_end stores the message of the error that ended a
// stream (its LOCH_STREAM_END record's status) in *err and returns that
// status; LOCH_EOF when the epoch ended, LOCH_OK while the stream runs.
//
//export loch_loader_stream_end
func loch_loader_stream_end(h C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	lo, err := loaderOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	s := lo.stream.Load()
	if s == nil {
		return fail(errOut, invalidf("loader is not streaming (loch_loader_stream)"))
	}
	s.mu.Lock()
	end := s.end
	s.mu.Unlock()
	switch {
	case end == nil:
		return C.LOCH_OK
	case errors.Is(end, io.EOF):
		return C.LOCH_EOF
	}
	return fail(errOut, end)
}

// loch_loader_state_at stores, as JSON, the state after the first taken
// batches this loader delivered (0 <= taken <= the batches delivered; as
// loch_loader_state, which is the state after all of them): for a caller
// that has taken fewer than the loader delivered, as a stream's caller.
//
//export loch_loader_state_at
func loch_loader_state_at(h C.uintptr_t, taken C.int64_t, out **C.char, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		state, err := lo.l.StateAt(int(taken))
		if err != nil {
			return err
		}
		return setJSON(out, state)
	})
}
