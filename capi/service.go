package main

/*
#include <stdlib.h>
#include "loch.h"
*/
import "C"

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A loader's life cycle served over a pair of pipes (ABI 14, loch_service).
//
// When a thread that Go did not start returns from a call into Go, the
// runtime leaves it in the system-call state still holding its processor
// (P), until sysmon takes the P back: after it has seen the P there at two
// of its passes, which is 10-20 ms when sysmon polls slowly. A stream's
// consumer that starts each epoch with loch_loader_new and
// loch_loader_stream, then blocks in read() on the batch pipe, so leaves
// the loader's workers one P short for the first 10-20 ms of every epoch.
// On two cores ds.pytorch() on lz4 went from 0.79 to 0.88 of `loch
// bench`'s throughput with this service (bench/RESULTS.md, issue 17).
// Requests written to a pipe and served by a goroutine take that call off
// the consumer's thread: it only reads and writes pipes. So do the calls
// that making a loader object takes (loader_config, dataset_version),
// which a consumer that makes one for each epoch makes just before the
// epoch starts: on two cores they delayed its first batch by 8 ms.
//
// A request made just after a loader started waits for the service
// goroutine to get a P from the loader's workers: on two cores a
// loader_stream after loader_new was answered 1.8 ms (median) into the
// epoch, 10 ms when the consumer's thread had just called into Go and
// held the other P. So a consumer opens its loader and its stream in one
// request ("depth"), and the stream's feeder starts with the workers.
//
// Requests (caller -> Go, the request pipe) and responses (Go -> caller,
// the response pipe) are JSON objects, one per line, answered in order:
//
//	{"id": N, "op": "loader_new", "dataset": H, "config": {...}}
//	    result: the loader's handle (loch_loader_new)
//	{"id": N, "op": "loader_new_mix", "datasets": [H, ...], "weights": [W, ...],
//	 "epoch_rows": R, "config": {...}}
//	    result: the loader's handle (loch_loader_new_mix)
//	either of the two with "depth": D (ABI 15; D >= 1) also streams the
//	    loader at once (loch_loader_stream with depth D)
//	    result: {"loader": H, "batch_fd": B, "report_fd": R}; when the
//	    stream cannot start, the loader is closed and the error is
//	    loch_loader_stream's
//	{"id": N, "op": "loader_config", "config": {...}} (ABI 15)
//	    result: the configuration with Go's defaults (loch_loader_config)
//	{"id": N, "op": "dataset_version", "dataset": H} (ABI 15)
//	    result: the id of the handle's snapshot (loch_dataset_version)
//	{"id": N, "op": "loader_stream", "loader": H, "depth": D}
//	    result: {"batch_fd": B, "report_fd": R} (loch_loader_stream)
//	{"id": N, "op": "loader_stats", "loader": H}
//	    result: the statistics object (loch_loader_stats)
//	{"id": N, "op": "loader_state_at", "loader": H, "taken": T}
//	    result: the state object (loch_loader_state_at)
//	{"id": N, "op": "loader_len", "loader": H}
//	    result: the number of batches (loch_loader_len)
//	{"id": N, "op": "loader_close", "loader": H}
//	    result: null (loch_loader_close)
//
// A response is {"id": N, "status": 0, "result": ...}, or {"id": N,
// "status": S, "error": "message"} where S is the LOCH_* status the
// function named would have returned. A line that is not such a request
// is answered with LOCH_INVALID_ARGUMENT (and the id it had, if any). The
// service ends when the caller closes its end of the request pipe, after
// which Go closes the response pipe.

// serviceRequest is one request line.
type serviceRequest struct {
	ID        int64           `json:"id"`
	Op        string          `json:"op"`
	Dataset   uint64          `json:"dataset"`
	Datasets  []uint64        `json:"datasets"`
	Weights   []float64       `json:"weights"`
	EpochRows int64           `json:"epoch_rows"`
	Loader    uint64          `json:"loader"`
	Config    json.RawMessage `json:"config"`
	Depth     int64           `json:"depth"`
	Taken     int64           `json:"taken"`
}

// serviceResponse is one response line.
type serviceResponse struct {
	ID     int64  `json:"id"`
	Status int    `json:"status"`
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// loch_service starts a goroutine that serves loader requests (see the
// protocol above) and stores the caller's ends of the two pipes: requests
// go to *request_fd, responses come from *response_fd. Both are blocking
// file descriptors that the caller closes; closing the request end stops
// the service.
//
//export loch_service
func loch_service(requestFD, responseFD *C.int, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	req, err := pipe()
	if err != nil {
		return fail(errOut, fmt.Errorf("service: %w", err))
	}
	resp, err := pipe()
	if err == nil {
		// Go's read end in Go's poller: a goroutine waits on it.
		err = unix.SetNonblock(req[0], true)
	}
	if err != nil {
		for _, fd := range append(req[:], resp[:]...) {
			if fd > 0 {
				unix.Close(fd)
			}
		}
		return fail(errOut, fmt.Errorf("service: %w", err))
	}
	in := os.NewFile(uintptr(req[0]), "loch service requests")
	out := os.NewFile(uintptr(resp[1]), "loch service responses")
	*requestFD, *responseFD = C.int(req[1]), C.int(resp[0])
	go serve(in, out)
	return C.LOCH_OK
}

// serve answers the requests read from in on out, one at a time, until in
// ends or out cannot be written.
func serve(in io.ReadCloser, out io.WriteCloser) {
	defer in.Close()
	defer out.Close()
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			b, merr := json.Marshal(answer(line))
			if merr != nil { // a result that is not JSON: cannot be
				b, _ = json.Marshal(serviceResponse{Status: int(C.LOCH_ERR), Error: merr.Error()})
			}
			if _, werr := out.Write(append(b, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// answer serves one request line.
func answer(line []byte) serviceResponse {
	var q serviceRequest
	if err := json.Unmarshal(line, &q); err != nil {
		return serviceResponse{Status: int(C.LOCH_INVALID_ARGUMENT), Error: fmt.Sprintf("service request: not a JSON object: %v", err)}
	}
	result, st, msg := dispatch(q)
	if st != C.LOCH_OK {
		return serviceResponse{ID: q.ID, Status: int(st), Error: msg}
	}
	return serviceResponse{ID: q.ID, Result: result}
}

// errUnknownOp is the error of a request naming no operation the service
// has.
var errUnknownOp = errors.New("unknown operation")

// dispatch calls the exported function of q.Op, returning its result, its
// status and, on failure, its message.
func dispatch(q serviceRequest) (result any, st C.int, msg string) {
	var errOut *C.char
	defer func() {
		if errOut != nil {
			msg = C.GoString(errOut)
			C.free(unsafe.Pointer(errOut))
		}
	}()
	h := C.uintptr_t(q.Loader)
	config := C.CString(string(q.Config)) // loader_new's and loader_new_mix's
	defer C.free(unsafe.Pointer(config))
	switch q.Op {
	case "loader_new":
		var out C.uintptr_t
		st = loch_loader_new(C.uintptr_t(q.Dataset), config, &out, &errOut)
		result, st = opened(q, out, st, &errOut)
		return result, st, ""
	case "loader_new_mix":
		if len(q.Weights) != len(q.Datasets) {
			return nil, C.LOCH_INVALID_ARGUMENT, fmt.Sprintf("service request %d: loader_new_mix: %d datasets and %d weights: want one weight per dataset", q.ID, len(q.Datasets), len(q.Weights))
		}
		handles := make([]C.uintptr_t, len(q.Datasets))
		for i, h := range q.Datasets {
			handles[i] = C.uintptr_t(h)
		}
		var out C.uintptr_t
		st = loaderNewMix(handles, q.Weights, q.EpochRows, config, &out, &errOut)
		result, st = opened(q, out, st, &errOut)
		return result, st, ""
	case "loader_config":
		var s *C.char
		st = loch_loader_config(config, &s, &errOut)
		return takeJSON(s), st, ""
	case "dataset_version":
		var s *C.char
		st = loch_dataset_version(C.uintptr_t(q.Dataset), &s, &errOut)
		if s == nil {
			return nil, st, ""
		}
		return takeString(s), st, ""
	case "loader_stream":
		var b, r C.int
		st = loch_loader_stream(h, C.int64_t(q.Depth), &b, &r, &errOut)
		return map[string]int{"batch_fd": int(b), "report_fd": int(r)}, st, ""
	case "loader_stats":
		var s *C.char
		st = loch_loader_stats(h, &s, &errOut)
		return takeJSON(s), st, ""
	case "loader_state_at":
		var s *C.char
		st = loch_loader_state_at(h, C.int64_t(q.Taken), &s, &errOut)
		return takeJSON(s), st, ""
	case "loader_len":
		var n C.int64_t
		st = loch_loader_len(h, &n, &errOut)
		return int64(n), st, ""
	case "loader_close":
		return nil, loch_loader_close(h, &errOut), ""
	}
	err := fmt.Errorf("service request %d: operation %q: %w (want loader_new, loader_new_mix, loader_config, dataset_version, loader_stream, loader_stats, loader_state_at, loader_len or loader_close)", q.ID, q.Op, errUnknownOp)
	return nil, C.LOCH_INVALID_ARGUMENT, err.Error()
}

// opened is the result of a loader_new or loader_new_mix request (q) whose
// call returned st and the loader's handle h: h, or with q.Depth the
// loader streaming (see the protocol above). A stream that cannot start
// closes the loader, and its error is the request's.
func opened(q serviceRequest, h C.uintptr_t, st C.int, errOut **C.char) (any, C.int) {
	if st != C.LOCH_OK || q.Depth == 0 {
		return uint64(h), st
	}
	var b, r C.int
	if st = loch_loader_stream(h, C.int64_t(q.Depth), &b, &r, errOut); st != C.LOCH_OK {
		var closeErr *C.char
		loch_loader_close(h, &closeErr) // a loader no one has seen: nothing to report
		if closeErr != nil {
			C.free(unsafe.Pointer(closeErr))
		}
		return nil, st
	}
	return map[string]uint64{"loader": uint64(h), "batch_fd": uint64(b), "report_fd": uint64(r)}, C.LOCH_OK
}

// takeJSON returns the JSON text a function stored in s, freeing it (nil
// for none).
func takeJSON(s *C.char) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(takeString(s))
}

// takeString returns the text a function stored in s (not NULL), freeing
// it.
func takeString(s *C.char) string {
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}
