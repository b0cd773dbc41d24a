package storage

import (
	"fmt"
	"strings"
)

// Settings are one store's connection settings, given in code rather than
// in the environment, so that one process can reach several clouds or
// accounts: each store opened WithSettings uses its own. A zero field
// leaves that setting to the URL's query parameters and the environment
// (see Open); a field set overrides both.
//
// The secrets (SecretAccessKey, SessionToken) are never logged nor put in
// errors or URLs: String and GoString leave them out, and Open's errors
// do not quote settings.
type Settings struct {
	// Endpoint is the service's address, http(s)://host[:port]: an
	// S3-compatible store (MinIO, R2, ...) for s3://.
	Endpoint string
	// Region is the S3 region.
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken (optional) are static
	// S3 credentials, used instead of the default credential chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// WithSettings makes Open use s for the store it opens (see Settings).
// Open refuses settings that the URL's scheme does not take, with an error
// wrapping ErrInvalidURL that names the setting.
func WithSettings(s Settings) Option {
	return func(c *openConfig) { c.settings = s }
}

// zero reports whether no setting is given.
func (s Settings) zero() bool { return s == Settings{} }

// check refuses settings that scheme does not take, and half-given
// credentials.
func (s Settings) check(scheme string) error {
	if scheme != "s3" {
		for _, f := range s.fields() {
			if f.set {
				return invalidURL(fmt.Sprintf("storage setting %s does not apply to %s:// (only to s3://)", f.name, scheme), nil)
			}
		}
		return nil
	}
	if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
		return invalidURL("storage settings: give access_key_id and secret_access_key together", nil)
	}
	if s.SessionToken != "" && s.AccessKeyID == "" {
		return invalidURL("storage settings: session_token without access_key_id and secret_access_key", nil)
	}
	return nil
}

type settingField struct {
	name   string
	set    bool
	value  string
	secret bool
}

func (s Settings) fields() []settingField {
	return []settingField{
		{"endpoint", s.Endpoint != "", s.Endpoint, false},
		{"region", s.Region != "", s.Region, false},
		{"access_key_id", s.AccessKeyID != "", s.AccessKeyID, false},
		{"secret_access_key", s.SecretAccessKey != "", "", true},
		{"session_token", s.SessionToken != "", "", true},
	}
}

// String lists the settings given, the secrets as "<set>".
func (s Settings) String() string {
	var parts []string
	for _, f := range s.fields() {
		switch {
		case !f.set:
		case f.secret:
			parts = append(parts, f.name+"=<set>")
		default:
			parts = append(parts, f.name+"="+f.value)
		}
	}
	return "storage.Settings{" + strings.Join(parts, " ") + "}"
}

// GoString is String, so that %#v does not print the secrets either.
func (s Settings) GoString() string { return s.String() }
