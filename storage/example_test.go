package storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lochdata/loch/storage"
)

func Example() {
	ctx := context.Background()
	st, err := storage.Open(ctx, "mem://example/datasets/demo")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	// The first writer of a key wins; the others learn it with ErrExists.
	if err := st.PutIfAbsent(ctx, "refs/main", []byte("commit-1")); err != nil {
		panic(err)
	}
	err = st.PutIfAbsent(ctx, "refs/main", []byte("commit-2"))
	fmt.Println(errors.Is(err, storage.ErrExists))

	ref, _ := st.Get(ctx, "refs/main")
	fmt.Println(string(ref))

	_, err = st.Get(ctx, "refs/dev")
	fmt.Println(err)
	// Output:
	// true
	// commit-1
	// storage: get mem://example/datasets/demo key "refs/dev": not found
}

func ExampleReadURL() {
	ctx := context.Background()
	st, _ := storage.Open(ctx, "mem://links")
	defer st.Close()
	_ = st.Put(ctx, "images/cat.jpg", []byte("meow"))

	// Link columns hold full URLs; ReadURL reads one object from its URL.
	b, err := storage.ReadURL(ctx, "mem://links/images/cat.jpg")
	fmt.Println(string(b), err)
	// Output: meow <nil>
}

func ExampleNewFaulty() {
	ctx := context.Background()
	inner, _ := storage.Open(ctx, "mem://faulty-example")
	_ = inner.Put(ctx, "k", []byte("v"))

	// A tenth of the reads fail with ErrTransient; the retry layer hides
	// them and counts its retries.
	faulty := storage.NewFaulty(inner, storage.FaultConfig{ReadErrorRate: 0.1, Seed: 1})
	st := storage.NewRetryStore(faulty, storage.RetryPolicy{BaseDelay: 1, MaxDelay: 1})
	for range 100 {
		if _, err := st.Get(ctx, "k"); err != nil {
			panic(err)
		}
	}
	fmt.Println(st.RetryCount() == faulty.Injected(), st.RetryCount() > 0)
	// Output: true true
}
