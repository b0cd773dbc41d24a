//go:build !unix

package storage

import "os"

const mapSupported = false

func mapFile(*os.File, int64) (*Mapped, error) { return nil, nil }
