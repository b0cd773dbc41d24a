package viewer

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/storage"
)

// MaxPage bounds the rows of one grid page.
const MaxPage = 200

// cookieName is the cookie that carries the token after its first use.
const cookieName = "loch_token"

//go:embed assets
var assets embed.FS

// Options configure a Server. The zero value serves without a token and
// accepts any Host header.
type Options struct {
	// Token, when not empty, is required on every request (?token= once,
	// then the cookie it sets).
	Token string
	// Hosts, when not empty, lists the Host header values accepted
	// (host:port); others get 403.
	Hosts []string
	// Log receives the errors behind 500 responses; nil discards them.
	Log io.Writer
	// Open are extra options every dataset is opened with.
	Open []loch.Option
}

// Server serves one dataset or one catalog. Make one with New.
type Server struct {
	opts   Options
	src    *source
	mux    *http.ServeMux
	pages  *template.Template
	csrf   string
	logMu  sync.Mutex
	static http.Handler

	thumbMu sync.Mutex
	thumbs  *lru.Cache[string, []byte] // encoded thumbnails by ETag
}

// thumbCacheBytes bounds the encoded thumbnails a Server keeps.
const thumbCacheBytes = 64 << 20

// New opens target, a catalog root or a dataset URL (a catalog when a
// catalog is there, else a dataset), and returns its Server. It fails with
// loch.ErrNotFound when target holds neither.
func New(ctx context.Context, target string, opts Options) (*Server, error) {
	src, err := openSource(ctx, target, opts.Open)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, src: src, csrf: randomHex(16), thumbs: lru.New[string, []byte](thumbCacheBytes, nil)}
	s.pages, err = template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		src.close()
		return nil, fmt.Errorf("viewer templates: %w", err)
	}
	sub, _ := fs.Sub(assets, "assets")
	s.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	s.routes()
	return s, nil
}

// Close releases the datasets and the catalog the Server opened.
func (s *Server) Close() error { return s.src.close() }

// Guard returns the token and hosts that Options should have for a
// listener at addr: a loopback address accepts only its own Host names and
// needs no token; any other address needs a fresh random token.
func Guard(addr net.Addr) (token string, hosts []string) {
	ta, ok := addr.(*net.TCPAddr)
	if ok && ta.IP.IsLoopback() {
		p := strconv.Itoa(ta.Port)
		return "", []string{"127.0.0.1:" + p, "localhost:" + p, "[::1]:" + p, ta.String()}
	}
	return randomHex(32), nil
}

// GuardFor sets on s the token and hosts that Guard returns for addr, in
// place of Options.Token and Options.Hosts, and returns the token: for a
// caller that opens the target (New) before it listens, so that a target
// that cannot be shown is reported before the address is taken. It must
// be called before s serves.
func (s *Server) GuardFor(addr net.Addr) (token string) {
	s.opts.Token, s.opts.Hosts = Guard(addr)
	return s.opts.Token
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("viewer: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// ServeHTTP applies the security rules and routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; media-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if len(s.opts.Hosts) > 0 && !contains(s.opts.Hosts, r.Host) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not served here (want one of %s)", r.Host, strings.Join(s.opts.Hosts, ", ")))
		return
	}
	if s.opts.Token != "" && !s.authorized(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		httpError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: the viewer is read-only")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized checks the token (cookie, or ?token= which sets the cookie
// and redirects to the URL without it); it answers 401 itself.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if c, err := r.Cookie(cookieName); err == nil && equal(c.Value, s.opts.Token) {
		return true
	}
	q := r.URL.Query()
	if t := q.Get("token"); t != "" && equal(t, s.opts.Token) {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	httpError(w, http.StatusUnauthorized, "this viewer needs the token that 'loch serve' printed when it started: open the URL it printed")
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.handleRoot)
	m.Handle("GET /static/", s.static)
	m.HandleFunc("GET /t/{table}/{$}", s.handleDataset)
	m.HandleFunc("GET /t/{table}/grid", s.handleGrid)
	m.HandleFunc("GET /t/{table}/row/{pos}", s.handleRow)
	m.HandleFunc("GET /t/{table}/thumb", s.handleThumb)
	m.HandleFunc("GET /t/{table}/sample", s.handleSample)
	m.HandleFunc("GET /t/{table}/log", s.handleLog)
	m.HandleFunc("GET /t/{table}/diff", s.handleDiff)
	m.HandleFunc("POST /t/{table}/selections", s.handleSave)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "no page "+r.URL.Path)
	})
	s.mux = m
}

// badRequest is a client error with its status.
type badRequest struct {
	status int
	msg    string
}

func (e *badRequest) Error() string { return e.msg }

func badf(format string, a ...any) error {
	return &badRequest{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &badRequest{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

// status maps an error to an HTTP status and the message the client sees:
// the library's sentinels are 4xx with their message; anything else is a
// 500 whose message hides the error.
func status(err error) (int, string) {
	var br *badRequest
	switch {
	case errors.As(err, &br):
		return br.status, br.msg
	case errors.Is(err, loch.ErrNotFound), errors.Is(err, catalog.ErrNoCatalog):
		return http.StatusNotFound, oneLine(err.Error())
	case errors.Is(err, loch.ErrTooLarge): // a sample past the decode limit
		return http.StatusUnprocessableEntity, oneLine(err.Error())
	case errors.Is(err, loch.ErrInvalidArgument):
		return http.StatusBadRequest, oneLine(err.Error())
	case errors.Is(err, loch.ErrExists), errors.Is(err, loch.ErrConflict):
		return http.StatusConflict, oneLine(err.Error())
	case errors.Is(err, loch.ErrReadOnly):
		return http.StatusForbidden, oneLine(err.Error())
	case errors.Is(err, loch.ErrPermission):
		return http.StatusForbidden, oneLine(err.Error())
	case errors.Is(err, context.Canceled):
		return 499, "request cancelled"
	}
	return http.StatusInternalServerError, "internal error (see the server's log)"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fail answers a request with err: an HTML page for pages, text otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, page bool) {
	code, msg := status(err)
	if code >= 500 && s.opts.Log != nil {
		s.logMu.Lock()
		fmt.Fprintf(s.opts.Log, "loch serve: %s %s: %s\n", r.Method, r.URL.Path, oneLine(err.Error()))
		s.logMu.Unlock()
	}
	if !page {
		httpError(w, code, msg)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	s.pages.ExecuteTemplate(w, "error.html", map[string]any{"Status": code, "Message": msg, "Title": http.StatusText(code)})
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, oneLine(msg), code)
}

// render executes a page template.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data map[string]any) {
	data["CSRF"] = s.csrf
	data["Catalog"] = s.src.cat != nil
	data["Root"] = storage.Redact(s.src.url)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	if err := s.pages.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, r, fmt.Errorf("render %s: %w", name, err), true)
		return
	}
	io.WriteString(w, b.String())
}

// intParam parses an integer parameter in [lo, hi]; def when absent.
func intParam(q url.Values, name string, def, lo, hi int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badf("parameter %s=%q: want an integer from %d to %d", name, trunc(v, 40), lo, hi)
	}
	return n, nil
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
