package status

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// stateWords are the states in words, and the overall descriptions of the banner.
var stateWords = []string{"Operational", "Degraded performance", "Partial outage", "Major outage", "No data", "Minor Service Outage", "Partial System Outage", "Major Service Outage"}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(name string) func(*html.Node) bool { return func(n *html.Node) bool { return n.Data == name } }

// Every table has column headers (scoped), every row a header cell or a full row under the
// headers, and every coloured state carries its state in words; colour is never alone.
func TestPagesAreAccessible(t *testing.T) {
	t.Parallel()
	srv := server(t, fixture())
	for _, path := range []string{"/status", "/docs", "/", "/models"} {
		_, body := get(t, srv.URL+path)
		doc, err := html.Parse(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if h := all(doc, tag("html")); len(h) != 1 || attr(h[0], "lang") != "en" {
			t.Errorf("%s: <html> without lang", path)
		}
		tables := all(doc, tag("table"))
		if len(tables) < 1 || (path == "/status" && len(tables) < 2) {
			t.Fatalf("%s: %d tables", path, len(tables))
		}
		for _, tb := range tables {
			heads := all(tb, tag("thead"))
			if len(heads) != 1 {
				t.Errorf("%s: table %q has no header row", path, attr(tb, "id"))
				continue
			}
			cols := all(heads[0], tag("th"))
			for _, th := range cols {
				if attr(th, "scope") != "col" || text(th) == "" {
					t.Errorf("%s: table %q: header %q without scope=col or text", path, attr(tb, "id"), text(th))
				}
			}
			for _, body := range all(tb, tag("tbody")) {
				for _, tr := range all(body, tag("tr")) {
					ths := all(tr, tag("th"))
					cells := len(ths) + len(all(tr, tag("td")))
					spanned := len(all(tr, func(n *html.Node) bool { return attr(n, "colspan") != "" })) > 0
					// A row continuing a rowgroup carries one cell less than the headers.
					if !spanned && cells != len(cols) && !(len(ths) == 0 && cells == len(cols)-1) {
						t.Errorf("%s: table %q: a row with %d cells under %d headers", path, attr(tb, "id"), cells, len(cols))
					}
					for _, th := range ths {
						if s := attr(th, "scope"); s != "row" && s != "rowgroup" {
							t.Errorf("%s: table %q: row header %q without scope", path, attr(tb, "id"), text(th))
						}
					}
				}
			}
		}
		coloured := all(doc, func(n *html.Node) bool {
			return slices.ContainsFunc(strings.Fields(attr(n, "class")), func(c string) bool { return strings.HasPrefix(c, "s-") })
		})
		if path == "/status" && len(coloured) < 20 {
			t.Fatalf("%s: only %d coloured states", path, len(coloured))
		}
		for _, n := range coloured {
			got := text(n)
			if !slices.ContainsFunc(stateWords, func(w string) bool { return strings.Contains(got, w) }) {
				t.Errorf("%s: a coloured %s <%s> says %q, not its state in words", path, attr(n, "class"), n.Data, got)
			}
		}
	}
}

// The page as a browser draws it: headless Chromium under the page's own CSP, with the
// stylesheet loaded from the site. Skips when Chromium is not installed (make test installs it), or
// when the browser cannot start at all in this environment: it died by a signal on every
// attempt before it asked for the page, which says nothing about the page.
func TestChromiumRendersTheStatusPage(t *testing.T) {
	t.Parallel()
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium)")
	}
	srv := server(t, fixture())
	img := screenshot(t, bin, srv, "/status", 1200, 900)
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 900 {
		t.Fatalf("screenshot is %v, want 1200x900", b)
	}
	// The page background comes from the stylesheet: loaded despite default-src 'none'.
	if c := img.At(10, 890); !near(c, color.RGBA{0xf7, 0xf8, 0xfa, 0xff}) {
		t.Errorf("background at (10,890) is %v, want #f7f8fa from style.css", c)
	}
	// The banner of the overall state (major outage: #c53030) spans the content column.
	banner := -1
	for y := 0; y < 300 && banner < 0; y++ {
		if near(img.At(600, y), color.RGBA{0xc5, 0x30, 0x30, 0xff}) && near(img.At(1000, y), color.RGBA{0xc5, 0x30, 0x30, 0xff}) {
			banner = y
		}
	}
	if banner < 0 {
		t.Fatalf("no red banner across x=600..1000 in the top 300 px")
	}
	// Left and right of the 1100 px column the background shows again.
	if c := img.At(5, banner+5); !near(c, color.RGBA{0xf7, 0xf8, 0xfa, 0xff}) {
		t.Errorf("left of the banner at (5,%d) is %v, want the background", banner+5, c)
	}
}

func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) bool { return int(x>>8)-int(y) < 12 && int(y)-int(x>>8) < 12 }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

var (
	background = color.RGBA{0xf7, 0xf8, 0xfa, 0xff}
	linkBlue   = color.RGBA{0x2b, 0x6c, 0xb0, 0xff}
)

// screenshot draws path of srv in headless Chromium at width×height, through a server that
// counts the browser's requests. It skips the test when the browser cannot start here: it
// died by a signal on every attempt before it asked for the page, which says nothing about
// the page. With -v the PNG is also kept in the temporary directory for a person to look at.
func screenshot(t *testing.T, bin string, srv *httptest.Server, path string, width, height int) image.Image {
	t.Helper()
	var fetched atomic.Int32
	watched := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(watched.Close)
	dir := t.TempDir()
	shot := filepath.Join(dir, "page.png")
	var crashes []string
	for attempt, extra := range [][]string{nil, {"--single-process"}, {"--single-process", "--disable-features=VizDisplayCompositor"}} {
		fetched.Store(0)
		out, err := runChromium(bin, filepath.Join(dir, fmt.Sprint("profile", attempt)), width, height, append(extra, "--screenshot="+shot, watched.URL+path))
		if err == nil {
			crashes = nil
			break
		}
		var exit *exec.ExitError
		if signalled := errors.As(err, &exit) && !exit.Exited(); signalled && fetched.Load() == 0 {
			// Killed by a signal before the first request: the browser, not the page.
			crashes = append(crashes, fmt.Sprintf("attempt %d %v: %v\n%s", attempt+1, extra, err, out))
			continue
		}
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	if len(crashes) > 0 {
		t.Skipf("chromium cannot start here (every attempt died by a signal before it asked for the page):\n%s", strings.Join(crashes, "\n"))
	}
	raw := mustRead(t, shot)
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("%s: screenshot is %v, want %dx%d", path, b, width, height)
	}
	if testing.Verbose() {
		name := strings.NewReplacer("/", "_", "?", "_", "=", "_").Replace(fmt.Sprintf("page%s-%d.png", path, width))
		_ = os.WriteFile(filepath.Join(os.TempDir(), name), raw, 0o644)
	}
	return img
}

// The landing page, the models page and the status page as a phone (390 px) and a desktop
// (1280 px) draw them:
// the stylesheet loads under the CSP (the background and the link colour come from it), and
// on /models the chosen currency is the filled pill near the top.
func TestChromiumRendersTheLandingAndModelsPages(t *testing.T) {
	t.Parallel()
	bin := chromium()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium)")
	}
	srv := server(t, fixture())
	for _, path := range []string{"/", "/models?currency=USD", "/models", "/status"} {
		for _, width := range []int{390, 1280} {
			img := screenshot(t, bin, srv, path, width, 900)
			if c := img.At(2, 4); !near(c, background) {
				t.Errorf("%s at %d px: (2,4) is %v, want the background #f7f8fa from style.css", path, width, c)
			}
			switch path {
			case "/":
				continue
			case "/status":
				// The major outage banner, at a phone's width too.
				if c := img.At(width/2, 140); !near(c, color.RGBA{0xc5, 0x30, 0x30, 0xff}) {
					t.Errorf("/status at %d px: (%d,140) is %v, want the red banner", width, width/2, c)
				}
				continue
			}
			pill := false
			for y := 0; y < 300 && !pill; y++ {
				for x := 0; x < width && !pill; x++ {
					pill = near(img.At(x, y), linkBlue)
				}
			}
			if !pill {
				t.Errorf("%s at %d px: no filled currency pill (#2b6cb0) in the top 300 px", path, width)
			}
		}
	}
}

// chromium finds the browser: Debian's binary itself rather than its launcher script, whose
// sourced settings (extensions to load, a /dev/shm probe that breaks on stacked mounts) are
// for desktops.
func chromium() string {
	if _, err := os.Stat("/usr/lib/chromium/chromium"); err == nil {
		return "/usr/lib/chromium/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs one headless browser to completion with a fresh profile and home (no
// crash reporter, no shared-memory files, no network beyond the page), killing it after 90 s.
func runChromium(bin, profile string, width, height int, args []string) (string, error) {
	cmd := exec.Command(bin, append([]string{"--headless", "--no-sandbox", "--no-zygote", "--disable-gpu",
		"--disable-dev-shm-usage", "--disable-crash-reporter", "--disable-breakpad", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + profile, fmt.Sprintf("--window-size=%d,%d", width, height)}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+profile, "XDG_CONFIG_HOME="+profile, "XDG_CACHE_HOME="+profile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), errors.New("chromium took over 90 s")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
