package ingest

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// job is one unit of work of the pipeline. It runs on a worker goroutine
// and must stop early when ctx is cancelled.
type job[T any] func(ctx context.Context) (T, error)

// ordered runs a bounded, order-preserving pipeline: produce runs on one
// goroutine and emits jobs in order; n workers run the jobs; consume
// receives their results on one goroutine, in the order the jobs were
// emitted. At most 2n+2 jobs are in flight (emitted but not consumed), so
// emit blocks when consume falls behind.
//
// The first error (from produce, a job or consume) cancels the context
// passed to the others and is returned, after every goroutine has stopped.
// emit returns an error only when the context is cancelled; produce should
// then return it.
func ordered[T any](ctx context.Context, n int,
	produce func(ctx context.Context, emit func(job[T]) error) error,
	consume func(T) error) error {
	if n < 1 {
		n = 1
	}
	type slot struct {
		job  job[T]
		done chan struct{} // closed when val and err are set
		val  T
		err  error
	}
	g, ctx := errgroup.WithContext(ctx)
	work := make(chan *slot, n)    // slots waiting for a worker
	queue := make(chan *slot, 2*n) // every slot, in order, waiting for consume

	g.Go(func() error {
		defer close(work)
		defer close(queue)
		emit := func(j job[T]) error {
			s := &slot{job: j, done: make(chan struct{})}
			// The slot enters the queue before the work channel, so that
			// consume can wait on it; workers never block, so the second
			// send always progresses.
			select {
			case queue <- s:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case work <- s:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}
		return produce(ctx, emit)
	})
	for range n {
		g.Go(func() error {
			for s := range work {
				if err := ctx.Err(); err != nil {
					s.err = err
				} else {
					s.val, s.err = s.job(ctx)
				}
				close(s.done)
			}
			return nil
		})
	}
	g.Go(func() error {
		for s := range queue {
			select {
			case <-s.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if s.err != nil {
				return s.err
			}
			if err := consume(s.val); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}
