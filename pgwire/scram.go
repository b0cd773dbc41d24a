package pgwire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it: the user
// name is the startup message's (the client sends n=), no channel
// binding is offered (a client's "y" flag is accepted), and the verifier
// is stored in PostgreSQL's pg_authid form.

// scramMechanism is the only SASL mechanism the server offers.
const scramMechanism = "SCRAM-SHA-256"

// DefaultIterations is the PBKDF2 iteration count of new verifiers
// (RFC 7677 asks for at least 4096).
const DefaultIterations = 4096

// Verifier is a stored SCRAM-SHA-256 credential: the salt, the iteration
// count, StoredKey = H(ClientKey) and ServerKey, never the password.
type Verifier struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// NewVerifier derives the verifier of password with a fresh 16-byte
// random salt and iterations rounds (DefaultIterations when < 4096).
func NewVerifier(password string, iterations int) (Verifier, error) {
	if iterations < DefaultIterations {
		iterations = DefaultIterations
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return Verifier{}, fmt.Errorf("scram: salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return Verifier{}, fmt.Errorf("scram: %w", err)
	}
	clientKey := hmacSum(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return Verifier{Salt: salt, Iterations: iterations, StoredKey: stored[:], ServerKey: hmacSum(salted, "Server Key")}, nil
}

// String is the verifier in PostgreSQL's form:
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, base64.
func (v Verifier) String() string {
	b := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s$%d:%s$%s:%s", scramMechanism, v.Iterations, b(v.Salt), b(v.StoredKey), b(v.ServerKey))
}

// ParseVerifier reads a verifier in String's form.
func ParseVerifier(s string) (Verifier, error) {
	bad := func(what string) (Verifier, error) {
		return Verifier{}, fmt.Errorf("scram verifier: %s, want SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", what)
	}
	parts := strings.Split(s, "$")
	if len(parts) != 3 || parts[0] != scramMechanism {
		return bad("not three $-separated parts starting with SCRAM-SHA-256")
	}
	iter, salt, ok1 := strings.Cut(parts[1], ":")
	stored, server, ok2 := strings.Cut(parts[2], ":")
	if !ok1 || !ok2 {
		return bad("a part without ':'")
	}
	var v Verifier
	var err error
	if v.Iterations, err = strconv.Atoi(iter); err != nil || v.Iterations < DefaultIterations {
		return bad(fmt.Sprintf("iterations %q (at least %d)", iter, DefaultIterations))
	}
	dec := base64.StdEncoding.DecodeString
	if v.Salt, err = dec(salt); err != nil || len(v.Salt) == 0 {
		return bad("a salt that is not base64")
	}
	if v.StoredKey, err = dec(stored); err != nil || len(v.StoredKey) != sha256.Size {
		return bad("a StoredKey that is not 32 bytes of base64")
	}
	if v.ServerKey, err = dec(server); err != nil || len(v.ServerKey) != sha256.Size {
		return bad("a ServerKey that is not 32 bytes of base64")
	}
	return v, nil
}

func hmacSum(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// errAuth is every failed SCRAM exchange: the client learns no more.
var errAuth = errors.New("password authentication failed")

// scramServer is the server's side of one exchange.
type scramServer struct {
	v                            Verifier
	clientFirstBare, serverFirst string
	nonce                        string
}

// first takes the client-first-message and returns the server-first-message.
func (s *scramServer) first(msg []byte) (string, error) {
	m := string(msg)
	var gs2 string
	switch {
	case strings.HasPrefix(m, "n,,"), strings.HasPrefix(m, "y,,"):
		gs2, s.clientFirstBare = m[:3], m[3:]
	default:
		return "", fmt.Errorf("scram: client-first-message: want the GS2 header n,, or y,, (no channel binding)")
	}
	_ = gs2
	var cnonce string
	for _, attr := range strings.Split(s.clientFirstBare, ",") {
		if v, ok := strings.CutPrefix(attr, "r="); ok {
			cnonce = v
		}
	}
	if cnonce == "" {
		return "", fmt.Errorf("scram: client-first-message has no nonce")
	}
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("scram: nonce: %w", err)
	}
	s.nonce = cnonce + base64.RawStdEncoding.EncodeToString(b)
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(s.v.Salt), s.v.Iterations)
	return s.serverFirst, nil
}

// final takes the client-final-message, checks the proof and returns the
// server-final-message; errAuth when the proof is wrong.
func (s *scramServer) final(msg []byte) (string, error) {
	m := string(msg)
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return "", fmt.Errorf("scram: client-final-message has no proof")
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	var nonce, cb string
	for _, attr := range strings.Split(withoutProof, ",") {
		if v, ok := strings.CutPrefix(attr, "r="); ok {
			nonce = v
		} else if v, ok := strings.CutPrefix(attr, "c="); ok {
			cb = v
		}
	}
	if nonce != s.nonce || (cb != "biws" && cb != "eSws") {
		return "", errAuth
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != sha256.Size {
		return "", errAuth
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	sig := hmacSum(s.v.StoredKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for k := range clientKey {
		clientKey[k] = proof[k] ^ sig[k]
	}
	got := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(got[:], s.v.StoredKey) != 1 {
		return "", errAuth
	}
	return "v=" + base64.StdEncoding.EncodeToString(hmacSum(s.v.ServerKey, authMessage)), nil
}
