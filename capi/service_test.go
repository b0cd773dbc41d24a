package main

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveLines runs the service over the request lines and returns its
// responses, one per line; the service must end when the requests do.
func serveLines(t *testing.T, requests ...string) []serviceResponse {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(inR, outW)
	}()
	go func() {
		for _, r := range requests {
			if _, err := inW.Write([]byte(r)); err != nil {
				return
			}
		}
		inW.Close()
	}()
	var got []serviceResponse
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		var r serviceResponse
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "a response is one JSON object per line: %q", sc.Text())
		got = append(got, r)
	}
	<-done
	return got
}

// The statuses of loch.h the service answers with here.
const statusInvalid, statusClosed = 6, 12

func TestServiceAnswersInOrderAndNamesBadRequests(t *testing.T) {
	got := serveLines(t,
		`{"id": 1, "op": "loader_stats", "loader": 0}`+"\n",
		"not json\n",
		`{"id": 3, "op": "loader_flush", "loader": 5}`+"\n",
		`{"id": 4, "op": "loader_close", "loader": 987654321}`+"\n",
		`{"id": 5, "op": "loader_new", "dataset": 0, "config": {"batch_size": 4}}`, // the last line may lack its newline
	)
	require.Len(t, got, 5)
	for i, want := range []int64{1, 0, 3, 4, 5} {
		require.Equal(t, want, got[i].ID, "response %d answers request %d, in order", i, want)
	}
	// A closed or unknown handle: the status the function returns, and
	// its message.
	require.Equal(t, int(statusClosed), got[0].Status)
	require.Contains(t, got[0].Error, "loader handle is closed")
	require.Equal(t, int(statusClosed), got[3].Status)
	require.Contains(t, got[3].Error, "987654321")
	require.Equal(t, int(statusClosed), got[4].Status)
	require.Contains(t, got[4].Error, "dataset handle is closed")
	// A line that is not a request, and an operation the service lacks.
	require.Equal(t, int(statusInvalid), got[1].Status)
	require.Contains(t, got[1].Error, "not a JSON object")
	require.Equal(t, int(statusInvalid), got[2].Status)
	require.Contains(t, got[2].Error, `"loader_flush"`)
	require.Contains(t, got[2].Error, "loader_new")
}

func TestServiceChecksConfigsAndNamesClosedDatasets(t *testing.T) {
	got := serveLines(t,
		`{"id": 1, "op": "loader_config", "config": {"batch_size": 4}}`+"\n",
		`{"id": 2, "op": "loader_config", "config": {"batch_size": -4}}`+"\n",
		`{"id": 3, "op": "loader_config", "config": {"batch_sise": 4}}`+"\n",
		`{"id": 4, "op": "dataset_version", "dataset": 0}`+"\n",
		`{"id": 5, "op": "loader_new", "dataset": 0, "config": {"batch_size": 4}, "depth": 8}`+"\n",
	)
	require.Len(t, got, 5)
	// A configuration with Go's defaults filled in, as loch_loader_config.
	require.Equal(t, 0, got[0].Status, got[0].Error)
	cfg, ok := got[0].Result.(map[string]any)
	require.True(t, ok, "a configuration object: %#v", got[0].Result)
	require.EqualValues(t, 4, cfg["batch_size"])
	require.Contains(t, cfg, "prefetch_batches")
	// A setting out of range, and one Go does not know.
	require.Equal(t, int(statusInvalid), got[1].Status)
	require.Contains(t, got[1].Error, "batch size -4")
	require.Equal(t, int(statusInvalid), got[2].Status)
	require.Contains(t, got[2].Error, "batch_sise")
	// A closed dataset: no version, and no loader (nor stream) opened.
	for _, r := range got[3:] {
		require.Equal(t, int(statusClosed), r.Status)
		require.Contains(t, r.Error, "dataset handle is closed")
		require.Nil(t, r.Result)
	}
}

func TestServiceEndsWithItsRequests(t *testing.T) {
	require.Empty(t, serveLines(t))
}

func FuzzServiceRequests(f *testing.F) {
	f.Add(`{"id": 1, "op": "loader_len", "loader": 3}`)
	f.Add(`{"id": -7, "op": "loader_state_at", "loader": 1, "taken": -1}`)
	f.Add(`{"id": 2, "op": "loader_new", "dataset": 1, "config": []}`)
	f.Add(`{"id": 2, "op": "loader_stream", "loader": 1, "depth": 0}`)
	f.Add(`{"id": 3, "op": "loader_config", "config": {"batch_size": 1e99}}`)
	f.Add(`{"id": 4, "op": "loader_new", "dataset": 1, "config": {}, "depth": -1}`)
	f.Add(`{"id": 5, "op": "dataset_version", "dataset": 18446744073709551615}`)
	f.Add("\x00\xff{")
	f.Fuzz(func(t *testing.T, line string) {
		// No handle is open in this process: every request fails, with a
		// status and a message, but a loader_config that may succeed (it
		// needs none), and none ends the service early.
		line = strings.ReplaceAll(line, "\n", " ")
		got := serveLines(t, line+"\n", `{"id": 42, "op": "loader_len", "loader": 0}`+"\n")
		require.Len(t, got, 2)
		if got[0].Status == 0 {
			var q serviceRequest
			require.NoError(t, json.Unmarshal([]byte(line), &q))
			require.Equal(t, "loader_config", q.Op, "only a loader_config succeeds with no handle open")
			require.IsType(t, map[string]any{}, got[0].Result)
		} else {
			require.NotEmpty(t, got[0].Error)
		}
		require.Equal(t, int64(42), got[1].ID)
	})
}
