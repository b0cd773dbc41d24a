package loch

import "context"

// Progress receives reports of the work of a long call (Verify, GC,
// Merge): in phase, done units of total so far, total being -1 while it is
// not known. The phases and units are those of each call's documentation.
// Calls for one operation never overlap, but they come from the call's
// goroutines, so Progress must be quick and must not call back into the
// Dataset.
type Progress func(phase string, done, total int64)

// WithProgress returns a context that carries p, to which Verify, GC and
// Merge called with it report their progress (like net/http/httptrace's
// hooks, it changes nothing else). A nil p reports nowhere.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, hookKey[Progress]{}, p)
}

// progressOf returns the Progress that ctx carries, or one that does
// nothing.
func progressOf(ctx context.Context) Progress {
	return hookOf(ctx, Progress(func(string, int64, int64) {}))
}

// Warnings receives warnings: what a call did that its caller may not
// expect, although it succeeded (a reference that names a branch and also
// reads as a version id prefix, as git warns "refname is ambiguous"). Each
// is one line naming the object. Like Progress it must be quick and must
// not call back into the Dataset.
type Warnings func(msg string)

// WithWarnings returns a context that carries w, to which the calls made
// with it report their warnings (the command line prints them on standard
// error). A nil w, or none, drops them.
func WithWarnings(ctx context.Context, w Warnings) context.Context {
	return context.WithValue(ctx, hookKey[Warnings]{}, w)
}

// warningsOf returns the Warnings that ctx carries, or one that drops them.
func warningsOf(ctx context.Context) Warnings {
	return hookOf(ctx, Warnings(func(string) {}))
}

// hookKey is the context key of a hook of type H (Progress, Warnings).
type hookKey[H any] struct{}

// hookOf returns the hook of type H that ctx carries, or none when it
// carries none or a nil one.
func hookOf[H Progress | Warnings](ctx context.Context, none H) H {
	if h, _ := ctx.Value(hookKey[H]{}).(H); h != nil {
		return h
	}
	return none
}
