package version

import (
	"regexp"
	"testing"
)

func TestString(t *testing.T) {
	// A release version both pip (PEP 440) and Go tooling read: N.N.N with
	// an optional pre-release such as "rc1".
	if v := String(); !regexp.MustCompile(`^\d+\.\d+\.\d+([a-z]+\d+)?$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, want N.N.N[rcN]", v)
	}
}
