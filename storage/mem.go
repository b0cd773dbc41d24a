package storage

import (
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
)

// memBuckets holds the memory buckets by name, for the life of the process.
var memBuckets struct {
	sync.Mutex
	m map[string]*blob.Bucket
}

// openMem opens mem://name/prefix. Every Open of the same name within a
// process shares one bucket, so data written through one store is seen by
// the others and survives their Close; it lives until the process exits.
func openMem(loc location) *bucketStore {
	memBuckets.Lock()
	defer memBuckets.Unlock()
	if memBuckets.m == nil {
		memBuckets.m = make(map[string]*blob.Bucket)
	}
	b, ok := memBuckets.m[loc.bucket]
	if !ok {
		b = memblob.OpenBucket(nil)
		memBuckets.m[loc.bucket] = b
	}
	return &bucketStore{b: b, name: loc.bucket, prefix: loc.prefix, url: loc.String(), shared: true}
}
