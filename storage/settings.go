package storage

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/base"
)

// Settings are one store's connection settings, given in code rather than
// in the environment, so that one process can reach several clouds or
// accounts: each store opened WithSettings uses its own. A zero field
// leaves that setting to the URL's query parameters and the environment
// (see Open); a field set overrides both. Each field applies to the
// schemes its comment names; Open refuses a field set for another scheme.
//
// The secrets (SecretAccessKey, SessionToken, GoogleCredentialsJSON,
// AzureAccountKey, AzureSASToken, AzureConnectionString) are never logged
// nor put in errors or URLs: String and GoString leave them out, and
// Open's errors do not quote settings.
type Settings struct {
	// Endpoint is the service's address (s3://, gs://, az://):
	// http(s)://host[:port] of an S3-compatible store (MinIO, R2, ...);
	// for gs://, the JSON API's base URL (an emulator such as
	// fake-gcs-server: http://127.0.0.1:4443; "/storage/v1/" is added
	// when the URL has no path); for az://, the blob service URL with the
	// account, e.g. http://127.0.0.1:10000/devstoreaccount1 (Azurite).
	Endpoint string
	// Region is the S3 region (s3://).
	Region string
	// AccessKeyID, SecretAccessKey and SessionToken (optional) are static
	// S3 credentials (s3://), used instead of the default credential
	// chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// Anonymous sends requests without credentials (s3://, gs://): public
	// buckets, and emulators that take no authentication.
	Anonymous bool
	// GoogleCredentialsFile is the path of a service account key file, and
	// GoogleCredentialsJSON such a key itself (gs://; at most one of
	// them), used instead of Application Default Credentials.
	GoogleCredentialsFile string
	GoogleCredentialsJSON string
	// AzureAccount is the storage account (az://); with AzureAccountKey
	// (shared key) or AzureSASToken (a shared access signature, without
	// the leading "?"), or alone for Azure AD credentials. The endpoint
	// defaults to https://<account>.blob.core.windows.net.
	AzureAccount    string
	AzureAccountKey string
	AzureSASToken   string
	// AzureConnectionString is an Azure storage connection string (az://),
	// which names the account, its key and the endpoint; not with the
	// other az:// settings.
	AzureConnectionString string
	// RetryBudget, when not zero, replaces the retry policy's Budget for
	// this store (every scheme): how long an operation goes on retrying a
	// failing store, from its first failure; negative means no bound on
	// the time (see RetryPolicy.Budget).
	RetryBudget time.Duration
}

// WithSettings makes Open use s for the store it opens (see Settings).
// Open refuses settings that the URL's scheme does not take, with an error
// wrapping ErrInvalidURL that names the setting.
func WithSettings(s Settings) Option {
	return func(c *openConfig) { c.settings = s }
}

// zero reports whether no setting is given.
func (s Settings) zero() bool { return s == Settings{} }

// check refuses settings that scheme does not take, and combinations that
// do not go together.
func (s Settings) check(scheme string) error {
	for _, f := range s.fields() {
		if f.set && !slices.Contains(f.schemes, scheme) {
			return invalidURL(fmt.Sprintf("storage setting %s does not apply to %s:// (only to %s)", f.name, scheme, schemeNames(f.schemes)), nil)
		}
	}
	switch scheme {
	case "s3":
		if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
			return invalidURL("storage settings: give access_key_id and secret_access_key together", nil)
		}
		if s.SessionToken != "" && s.AccessKeyID == "" {
			return invalidURL("storage settings: session_token without access_key_id and secret_access_key", nil)
		}
		if s.Anonymous && s.AccessKeyID != "" {
			return invalidURL("storage settings: anonymous with access_key_id", nil)
		}
	case "gs":
		if s.GoogleCredentialsFile != "" && s.GoogleCredentialsJSON != "" {
			return invalidURL("storage settings: give google_service_account or google_service_account_key, not both", nil)
		}
		if s.Anonymous && (s.GoogleCredentialsFile != "" || s.GoogleCredentialsJSON != "") {
			return invalidURL("storage settings: anonymous with Google credentials", nil)
		}
	case "az":
		if s.AzureConnectionString != "" && (s.AzureAccount != "" || s.AzureAccountKey != "" || s.AzureSASToken != "" || s.Endpoint != "") {
			return invalidURL("storage settings: connection_string names the account, key and endpoint; give no other Azure setting with it", nil)
		}
		if (s.AzureAccountKey != "" || s.AzureSASToken != "") && s.AzureAccount == "" {
			return invalidURL("storage settings: account_key or sas_token without account_name", nil)
		}
		if s.AzureAccountKey != "" && s.AzureSASToken != "" {
			return invalidURL("storage settings: give account_key or sas_token, not both", nil)
		}
	}
	return nil
}

// schemeNames lists schemes as "s3://, gs://".
func schemeNames(schemes []string) string {
	out := make([]string, len(schemes))
	for i, s := range schemes {
		out[i] = s + "://"
	}
	return strings.Join(out, ", ")
}

type settingField struct {
	name    string
	set     bool
	value   string
	secret  bool
	schemes []string // the schemes that take it
}

func (s Settings) fields() []settingField {
	anon := ""
	if s.Anonymous {
		anon = "true"
	}
	budget := ""
	if s.RetryBudget != 0 {
		budget = s.RetryBudget.String()
	}
	return []settingField{
		{"endpoint", s.Endpoint != "", s.Endpoint, false, []string{"s3", "gs", "az"}},
		{"region", s.Region != "", s.Region, false, []string{"s3"}},
		{"access_key_id", s.AccessKeyID != "", s.AccessKeyID, false, []string{"s3"}},
		{"secret_access_key", s.SecretAccessKey != "", "", true, []string{"s3"}},
		{"session_token", s.SessionToken != "", "", true, []string{"s3"}},
		{"anonymous", s.Anonymous, anon, false, []string{"s3", "gs"}},
		{"google_service_account", s.GoogleCredentialsFile != "", s.GoogleCredentialsFile, false, []string{"gs"}},
		{"google_service_account_key", s.GoogleCredentialsJSON != "", "", true, []string{"gs"}},
		{"account_name", s.AzureAccount != "", s.AzureAccount, false, []string{"az"}},
		{"account_key", s.AzureAccountKey != "", "", true, []string{"az"}},
		{"sas_token", s.AzureSASToken != "", "", true, []string{"az"}},
		{"connection_string", s.AzureConnectionString != "", "", true, []string{"az"}},
		{"retry_budget", s.RetryBudget != 0, budget, false, []string{"file", "mem", "s3", "gs", "az"}},
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

// optionKeys maps the option names ParseOptions accepts to the fields of
// Settings: loch's own (the first of each), and those of the object_store
// crate that Lance, Delta Lake and Polars take. Which scheme takes which
// field is Settings' rule.
var optionKeys = map[string]func(*Settings) *string{
	"endpoint":                        func(s *Settings) *string { return &s.Endpoint },
	"endpoint_url":                    func(s *Settings) *string { return &s.Endpoint },
	"aws_endpoint":                    func(s *Settings) *string { return &s.Endpoint },
	"aws_endpoint_url":                func(s *Settings) *string { return &s.Endpoint },
	"azure_storage_endpoint":          func(s *Settings) *string { return &s.Endpoint },
	"region":                          func(s *Settings) *string { return &s.Region },
	"aws_region":                      func(s *Settings) *string { return &s.Region },
	"access_key_id":                   func(s *Settings) *string { return &s.AccessKeyID },
	"aws_access_key_id":               func(s *Settings) *string { return &s.AccessKeyID },
	"secret_access_key":               func(s *Settings) *string { return &s.SecretAccessKey },
	"aws_secret_access_key":           func(s *Settings) *string { return &s.SecretAccessKey },
	"session_token":                   func(s *Settings) *string { return &s.SessionToken },
	"aws_session_token":               func(s *Settings) *string { return &s.SessionToken },
	"google_service_account":          func(s *Settings) *string { return &s.GoogleCredentialsFile },
	"google_application_credentials":  func(s *Settings) *string { return &s.GoogleCredentialsFile },
	"service_account":                 func(s *Settings) *string { return &s.GoogleCredentialsFile },
	"google_service_account_key":      func(s *Settings) *string { return &s.GoogleCredentialsJSON },
	"service_account_key":             func(s *Settings) *string { return &s.GoogleCredentialsJSON },
	"account_name":                    func(s *Settings) *string { return &s.AzureAccount },
	"azure_storage_account_name":      func(s *Settings) *string { return &s.AzureAccount },
	"account_key":                     func(s *Settings) *string { return &s.AzureAccountKey },
	"azure_storage_account_key":       func(s *Settings) *string { return &s.AzureAccountKey },
	"sas_token":                       func(s *Settings) *string { return &s.AzureSASToken },
	"azure_storage_sas_token":         func(s *Settings) *string { return &s.AzureSASToken },
	"connection_string":               func(s *Settings) *string { return &s.AzureConnectionString },
	"azure_storage_connection_string": func(s *Settings) *string { return &s.AzureConnectionString },
}

// anonymousKeys are the names of Settings.Anonymous, a boolean
// given as "true" or "false".
var anonymousKeys = []string{"anonymous", "skip_signature", "aws_skip_signature", "google_skip_signature"}

// ParseOptions converts storage options by name (the Python SDK's
// storage_options, the CLI's LOCH_STORAGE_OPTIONS) to Settings. Its errors
// wrap base.ErrInvalidArgument and name keys, never values (they may be
// secrets), but for retry_budget's, which is none.
func ParseOptions(opts map[string]string) (Settings, error) {
	var s Settings
	names := make([]string, 0, len(opts))
	for name := range opts {
		names = append(names, name)
	}
	slices.Sort(names)
	anonymous, budget := "", ""
	for _, name := range names {
		var p *string
		if slices.Contains(anonymousKeys, name) {
			p = &anonymous
		} else if name == "retry_budget" {
			p = &budget
		} else if field, ok := optionKeys[name]; ok {
			p = field(&s)
		} else {
			return Settings{}, invalidOption("storage_options: unknown option %q (want endpoint, region, access_key_id, secret_access_key, session_token, anonymous, google_service_account, google_service_account_key, account_name, account_key, sas_token, connection_string or retry_budget)", name)
		}
		if *p != "" && *p != opts[name] {
			return Settings{}, invalidOption("storage_options: %q and another name for the same setting differ", name)
		}
		*p = opts[name]
	}
	if anonymous != "" {
		b, err := strconv.ParseBool(anonymous)
		if err != nil {
			return Settings{}, invalidOption("storage_options: anonymous: want true or false")
		}
		s.Anonymous = b
	}
	if budget != "" {
		d, err := time.ParseDuration(budget)
		if err != nil {
			secs, ferr := strconv.ParseFloat(budget, 64)
			d, err = time.Duration(secs*float64(time.Second)), ferr
		}
		if err != nil || d <= 0 {
			return Settings{}, invalidOption("storage_options: retry_budget %q: want a duration above 0 such as 90s or 5m, or a number of seconds", budget)
		}
		s.RetryBudget = d
	}
	return s, nil
}

// invalidOption is a ParseOptions error.
func invalidOption(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), base.ErrInvalidArgument)
}
