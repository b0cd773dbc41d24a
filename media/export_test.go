//go:build cgo && !noffmpeg

package media

// SetLibraryFile makes the loader look library name (e.g. "libavcodec")
// up as file instead of its soname. Only before the first probe or decode
// of the process (a test runs it in a child process of its own).
func SetLibraryFile(name, file string) {
	for i := range libraries {
		if libraries[i].name == name {
			libraries[i].file = file
			return
		}
	}
	panic("media: no library " + name)
}
