//go:build !linux

package storage

import "os"

// writeData writes data to the new, empty file f.
func writeData(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}
