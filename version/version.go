// Package version holds loch's release version, the one place it is
// written: the file VERSION beside this one, embedded here. `loch version`
// prints it, and the Python package reads the same file (through the link
// python/loch/VERSION) for its metadata and loch.__version__.
package version

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var raw string

// String returns the release version, a PEP 440 and semantic version
// without a leading "v" (e.g. "0.1.0").
func String() string { return strings.TrimSpace(raw) }
