package pgwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/lochdata/loch"
)

// Rights a grant gives.
const (
	// RightRead lets a role query a table at the refs its grant names.
	RightRead = "read"
	// RightWrite lets a role INSERT, UPDATE, DELETE, MERGE INTO and
	// OPTIMIZE a table on the branches its grant names.
	RightWrite = "write"
	// RightDDL lets a role CREATE, ALTER and DROP the tables its grant
	// names (refs do not apply: a table's schema is the catalog's).
	RightDDL = "ddl"
	// RightMerge lets a role merge into the branches its grant names of
	// the tables it names (CALL loch_merge; held by admin).
	RightMerge = "merge"
)

// tagRefs is the ref pattern that matches every tag (not a version id).
const tagRefs = "tag:*"

// Grant gives Rights on the tables whose names match one of Tables, at
// the refs that match one of Refs. Patterns are path.Match globs ("*",
// "frames", "curation/*"); "*" alone matches every name, and the ref
// pattern "tag:*" matches every tag.
type Grant struct {
	Tables []string `json:"tables"`
	Refs   []string `json:"refs,omitempty"`
	Rights []string `json:"rights"`
}

// Role is a set of grants.
type Role struct {
	Grants []Grant `json:"grants"`
}

// User is one login: its role and its SCRAM-SHA-256 verifier.
type User struct {
	Role  string `json:"role"`
	SCRAM string `json:"scram"`
}

// Users is a users file (docs/pg.md): roles by name (besides the
// built-in reader, curator and admin, which it may redefine) and users by
// name.
type Users struct {
	Roles map[string]Role `json:"roles,omitempty"`
	Users map[string]User `json:"users"`
}

// BuiltinRoles are the roles every users file has unless it redefines
// them: reader queries every table at main and its tags; curator also
// writes to branches curation/*; admin reads and writes every ref,
// creates, alters and drops tables and merges.
var BuiltinRoles = map[string]Role{
	"reader": {Grants: []Grant{{Tables: []string{"*"}, Refs: []string{"main", tagRefs}, Rights: []string{RightRead}}}},
	"curator": {Grants: []Grant{
		{Tables: []string{"*"}, Refs: []string{"main", tagRefs, "curation/*"}, Rights: []string{RightRead}},
		{Tables: []string{"*"}, Refs: []string{"curation/*"}, Rights: []string{RightWrite}},
	}},
	"admin": {Grants: []Grant{{Tables: []string{"*"}, Refs: []string{"*"}, Rights: []string{RightRead, RightWrite, RightDDL, RightMerge}}}},
}

// LoadUsers reads a users file; a file that does not exist is an empty
// one (no users: every login is refused).
func LoadUsers(file string) (*Users, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return &Users{Users: map[string]User{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var u Users
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("users file %s: %w (want the JSON of docs/pg.md): %w", file, err, loch.ErrInvalidArgument)
	}
	if u.Users == nil {
		u.Users = map[string]User{}
	}
	if err := u.check(); err != nil {
		return nil, fmt.Errorf("users file %s: %w", file, err)
	}
	return &u, nil
}

// check validates every role and user.
func (u *Users) check() error {
	for name, r := range u.Roles {
		for i, g := range r.Grants {
			for _, right := range g.Rights {
				if !slices.Contains([]string{RightRead, RightWrite, RightDDL, RightMerge}, right) {
					return fmt.Errorf("role %s grant %d: right %q, want read, write, ddl or merge: %w", name, i, right, loch.ErrInvalidArgument)
				}
			}
			for _, p := range append(slices.Clone(g.Tables), g.Refs...) {
				if _, err := path.Match(p, ""); err != nil {
					return fmt.Errorf("role %s grant %d: pattern %q: %w", name, i, p, loch.ErrInvalidArgument)
				}
			}
		}
	}
	for name, usr := range u.Users {
		if _, ok := u.role(usr.Role); !ok {
			return fmt.Errorf("user %s: role %q is not defined (built-in: reader, curator, admin): %w", name, usr.Role, loch.ErrInvalidArgument)
		}
		if _, err := ParseVerifier(usr.SCRAM); err != nil {
			return fmt.Errorf("user %s: %w: %w", name, err, loch.ErrInvalidArgument)
		}
	}
	return nil
}

// role is the role named name: the file's, else a built-in one.
func (u *Users) role(name string) (Role, bool) {
	if r, ok := u.Roles[name]; ok {
		return r, true
	}
	r, ok := BuiltinRoles[name]
	return r, ok
}

// AddUser sets user name's role and the verifier of password.
func (u *Users) AddUser(name, role, password string) error {
	if name == "" || strings.ContainsAny(name, "\x00,=") {
		return fmt.Errorf("user name %q: want a non-empty name without NUL, ',' or '=': %w", name, loch.ErrInvalidArgument)
	}
	if _, ok := u.role(role); !ok {
		return fmt.Errorf("role %q is not defined (built-in: reader, curator, admin): %w", role, loch.ErrInvalidArgument)
	}
	if password == "" {
		return fmt.Errorf("user %s: empty password: %w", name, loch.ErrInvalidArgument)
	}
	v, err := NewVerifier(password, DefaultIterations)
	if err != nil {
		return err
	}
	if u.Users == nil {
		u.Users = map[string]User{}
	}
	u.Users[name] = User{Role: role, SCRAM: v.String()}
	return nil
}

// Save writes the users file (mode 0600), replacing it atomically.
func (u *Users) Save(file string) error {
	b, err := json.MarshalIndent(u, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	return nil
}

// access is what one statement needs: a right on a table at a ref.
type access struct {
	right, table, ref string
	tag               bool // ref is a tag
}

// allows reports whether role r grants a.
func (r Role) allows(a access) bool {
	for _, g := range r.Grants {
		if !slices.Contains(g.Rights, a.right) || !matchAny(g.Tables, a.table) {
			continue
		}
		if a.right == RightDDL || a.right == RightMerge && len(g.Refs) == 0 {
			return true
		}
		for _, p := range g.Refs {
			if p == tagRefs && a.tag || p != tagRefs && match(p, a.ref) {
				return true
			}
		}
	}
	return false
}

// everyRef reports whether r reads table at every ref (refs "*").
func (r Role) everyRef(table string) bool {
	for _, g := range r.Grants {
		if slices.Contains(g.Rights, RightRead) && matchAny(g.Tables, table) && slices.Contains(g.Refs, "*") {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, name) })
}

func match(p, name string) bool {
	if p == "*" {
		return true
	}
	ok, _ := path.Match(p, name)
	return ok
}

// refusal is the error of a statement its role may not run: it names the
// role, the table and the missing right, and wraps loch.ErrPermission.
func refusal(user, role string, a access) error {
	where := ""
	switch a.right {
	case RightRead:
		where = " at " + a.ref
	case RightWrite, RightMerge:
		where = " on branch " + a.ref
	}
	return fmt.Errorf("permission denied: user %s (role %s) lacks the %s right on table %s%s: %w", user, role, a.right, a.table, where, loch.ErrPermission)
}

// Names lists the users, sorted.
func (u *Users) Names() []string {
	out := make([]string, 0, len(u.Users))
	for n := range u.Users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
