package storage

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"
)

// FaultConfig says which faults a Faulty store injects.
type FaultConfig struct {
	// ReadErrorRate is the share, in [0, 1], of Get, ReadRange, Stat and
	// List calls that fail with a transient error (one wrapping
	// ErrTransient, which a RetryStore retries). A failing List fails
	// before it has delivered anything or part-way through.
	ReadErrorRate float64
	// WriteErrorRate is the share of Put, PutIfAbsent and Delete calls that
	// fail with a transient error: half of them before the write reaches
	// the inner store, half after it took effect (a lost reply).
	WriteErrorRate float64
	// Latency is added before every call, cut short if the context ends.
	Latency time.Duration
	// Seed makes the faults reproducible: which call fails is a function of
	// the seed, the operation, the key and how many times that operation
	// was called on that key before, so the same program run with the same
	// seed sees the same faults, however its goroutines interleave across
	// keys.
	Seed int64
}

// Faulty is a Store that injects transient failures and latency into
// another, for testing the code above it, and can be taken down whole (see
// SetOutage). It is safe for concurrent use.
type Faulty struct {
	inner    Store
	cfg      FaultConfig
	injected atomic.Int64
	down     atomic.Bool

	mu    sync.Mutex
	calls map[string]uint64 // by operation and key
}

// NewFaulty returns inner wrapped in fault injection. Closing it closes
// inner.
func NewFaulty(inner Store, cfg FaultConfig) *Faulty {
	return &Faulty{inner: inner, cfg: cfg, calls: make(map[string]uint64)}
}

// Injected returns the number of faults injected so far.
func (f *Faulty) Injected() int64 { return f.injected.Load() }

// Unwrap returns the wrapped store.
func (f *Faulty) Unwrap() Store { return f.inner }

// SetOutage takes the store down (true) or brings it back (false). While
// it is down every call fails at once, after the latency, with a transient
// error and without reaching the inner store, as calls to a stopped
// server are refused; each such failure counts in Injected.
func (f *Faulty) SetOutage(down bool) { f.down.Store(down) }

// errInjected is the cause of every injected fault, errOutage of the
// failures of a store that is down.
var (
	errInjected = errors.New("injected fault")
	errOutage   = errors.New("injected outage: the store is down")
)

// draw returns a deterministic number in [0, 1) for this call, and a
// second one for choosing how the fault shows.
func (f *Faulty) draw(op, key string) (float64, uint64) {
	f.mu.Lock()
	id := op + "\x00" + key
	n := f.calls[id]
	f.calls[id] = n + 1
	f.mu.Unlock()
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	x := splitmix(uint64(f.cfg.Seed) ^ h.Sum64() ^ splitmix(n))
	return float64(x>>11) / (1 << 53), splitmix(x)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// before sleeps the latency and decides whether this call fails; a call
// to a store that is down fails here, with err.
func (f *Faulty) before(ctx context.Context, op, key string, rate float64) (fail bool, aux uint64, err error) {
	if f.cfg.Latency > 0 {
		t := time.NewTimer(f.cfg.Latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, 0, f.fault(op, key, ctx.Err())
		}
	}
	if f.down.Load() {
		f.injected.Add(1)
		return false, 0, f.fault(op, key, transient(errOutage))
	}
	if rate <= 0 {
		return false, 0, nil
	}
	x, aux := f.draw(op, key)
	return x < rate, aux, nil
}

func (f *Faulty) fault(op, key string, err error) error {
	return &Error{Op: op, URL: f.inner.URL(), Key: key, Err: err}
}

func (f *Faulty) injectedFault(op, key string) error {
	f.injected.Add(1)
	return f.fault(op, key, transient(errInjected))
}

// read runs a read operation under ReadErrorRate.
func (f *Faulty) read(ctx context.Context, op, key string, call func() error) error {
	fail, _, err := f.before(ctx, op, key, f.cfg.ReadErrorRate)
	if err != nil {
		return err
	}
	if fail {
		return f.injectedFault(op, key)
	}
	return call()
}

// write runs a write operation under WriteErrorRate.
func (f *Faulty) write(ctx context.Context, op, key string, call func() error) error {
	fail, aux, err := f.before(ctx, op, key, f.cfg.WriteErrorRate)
	if err != nil {
		return err
	}
	if !fail {
		return call()
	}
	if aux&1 == 0 {
		return f.injectedFault(op, key)
	}
	if err := call(); err != nil {
		return err
	}
	return f.injectedFault(op, key) // it happened, but the reply was lost
}

// Get implements Store.
func (f *Faulty) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := f.read(ctx, "get", key, func() (err error) {
		out, err = f.inner.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadRange implements Store.
func (f *Faulty) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	return f.read(ctx, "read", key, func() error {
		return f.inner.ReadRange(ctx, key, off, dst)
	})
}

// Stat implements Store.
func (f *Faulty) Stat(ctx context.Context, key string) (Attrs, error) {
	var out Attrs
	err := f.read(ctx, "stat", key, func() (err error) {
		out, err = f.inner.Stat(ctx, key)
		return err
	})
	return out, err
}

// List implements Store. A failing listing stops after a deterministic
// number (0 to 3) of delivered entries.
func (f *Faulty) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	fail, aux, err := f.before(ctx, "list", prefix, f.cfg.ReadErrorRate)
	if err != nil {
		return err
	}
	if !fail {
		return f.inner.List(ctx, prefix, fn)
	}
	left := int(aux % 4)
	var fnErr error
	err = f.inner.List(ctx, prefix, func(a Attrs) error {
		if left == 0 {
			return errInjected
		}
		left--
		if err := fn(a); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil && !errors.Is(err, errInjected):
		return err
	}
	return f.injectedFault("list", prefix)
}

// Put implements Store.
func (f *Faulty) Put(ctx context.Context, key string, data []byte) error {
	return f.write(ctx, "put", key, func() error { return f.inner.Put(ctx, key, data) })
}

// PutIfAbsent implements Store.
func (f *Faulty) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return f.write(ctx, "put-if-absent", key, func() error { return f.inner.PutIfAbsent(ctx, key, data) })
}

// Delete implements Store.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	return f.write(ctx, "delete", key, func() error { return f.inner.Delete(ctx, key) })
}

// URL implements Store.
func (f *Faulty) URL() string { return f.inner.URL() }

// Close implements Store; it closes the wrapped store.
func (f *Faulty) Close() error { return f.inner.Close() }
