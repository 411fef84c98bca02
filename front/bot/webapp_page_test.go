package bot_test

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/png"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// -shots rewrites testdata/miniapp-*.png, the screenshots a person looked at once.
var updateShots = flag.Bool("shots", false, "write the Mini App screenshots to testdata/")

// telegramNight is Telegram Desktop's night theme as Telegram passes it to a Mini App.
const telegramNight = `{"bg_color":"#17212b","secondary_bg_color":"#232e3c","section_bg_color":"#17212b","text_color":"#f5f5f5","hint_color":"#708499",` +
	`"link_color":"#6ab3f3","button_color":"#5288c1","button_text_color":"#ffffff","accent_text_color":"#6ab2f2","destructive_text_color":"#ec3942"}`

// launchURL opens the page the way Telegram does: the launch parameters in the fragment.
func (m *miniApp) launchURL(initData, theme string) string {
	v := url.Values{}
	v.Set("tgWebAppData", initData)
	v.Set("tgWebAppVersion", "8.0")
	v.Set("tgWebAppPlatform", "tdesktop")
	if theme != "" {
		v.Set("tgWebAppThemeParams", theme)
	}
	return m.base + "/#" + v.Encode()
}

func hexColor(s string) color.RGBA {
	n, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return color.RGBA{uint8(n >> 16), uint8(n >> 8), uint8(n), 0xff}
}

func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(x uint32, y uint8) bool { return math.Abs(float64(int(x>>8)-int(y))) < 12 }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

// count is the number of pixels of a colour in a rectangle.
func count(img image.Image, r image.Rectangle, want color.RGBA) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if near(img.At(x, y), want) {
				n++
			}
		}
	}
	return n
}

// The page drawn from real usage (the API test's fixture) at a phone's and a desktop's size:
// a screenshot each, with Telegram's night theme applied from themeParams on the phone and the
// page's own light theme on the desktop, the charts' bars in the theme's button colour; the
// rendered DOM is accessible and shows no secret; without launch data the page says to open it
// from Telegram; Telegram's script never loads (telegram.org does not resolve).
func TestBotMiniAppPageInChromium(t *testing.T) {
	t.Parallel()
	if chromium() == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium)")
	}
	m := startMiniApp(t)
	ann, laptop, _, _ := m.usageFixture(t)
	ann.do(t, 200, "PATCH", "/api/keys/"+laptop["id"].(string), `{"budget":{"amount":"150","period":"MONTH"}}`)
	m.e.Admin("PATCH", "/admin/v1/keys/"+laptop["id"].(string), `{"expire_time":"`+time.Now().AddDate(0, 3, 0).UTC().Format(time.RFC3339)+`"}`)
	data := initData(botToken, 101, "Ann", time.Now().Add(-time.Minute))
	dir := t.TempDir()

	for _, tc := range []struct {
		name          string
		width, height int
		theme         string
		page, bar     color.RGBA
	}{
		{"390x844", 390, 844, telegramNight, hexColor("#232e3c"), hexColor("#5288c1")},
		{"1280x800", 1280, 800, "", hexColor("#eef1f4"), hexColor("#1a6cb3")},
	} {
		shot := filepath.Join(dir, tc.name+".png")
		runChromium(t, tc.width, tc.height, "--screenshot="+shot, m.launchURL(data, tc.theme))
		raw, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != tc.width || b.Dy() != tc.height {
			t.Fatalf("%s: screenshot is %v", tc.name, b)
		}
		if c := img.At(1, 1); !near(c, tc.page) {
			t.Errorf("%s: the page background at (1,1) is %v, want %v", tc.name, c, tc.page)
		}
		// The day chart's columns: a good number of pixels of the bar colour on screen.
		if n := count(img, img.Bounds(), tc.bar); n < 1500 {
			t.Errorf("%s: only %d pixels of the bar colour %v: no chart drawn?", tc.name, n, tc.bar)
		}
		if *updateShots {
			if err := os.WriteFile(filepath.Join("testdata", "miniapp-"+tc.name+".png"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The rendered page (the DOM after its script ran), for content and accessibility.
	dom := string(runChromium(t, 390, 844, "--dump-dom", m.launchURL(data, telegramNight)))
	mustContain(t, "rendered page", dom, "laptop", "ci-runner", "Spend per day over 30 days", "Spend per model: b-model", "150 RUB per month",
		"100 req/s", "RUB per 1M tokens", "Paid in Telegram Stars at 1.3 RUB per star")
	if strings.Contains(dom, "tma ") {
		t.Error("the DOM holds the Authorization header")
	}
	checkAccessible(t, dom)

	// Without launch data (opened outside Telegram) the page degrades to a message.
	bare := string(runChromium(t, 390, 844, "--dump-dom", m.base+"/"))
	mustContain(t, "page without launch data", bare, "Open this page from the bot")
	// A stale initData: the API's 401 becomes a message, no account is shown.
	stale := string(runChromium(t, 390, 844, "--dump-dom", m.launchURL(initData(botToken, 101, "Ann", time.Now().Add(-25*time.Hour)), "")))
	mustContain(t, "page with a stale initData", stale, "invalid or expired")
	if strings.Contains(stale, "laptop") {
		t.Error("a stale initData showed the keys")
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func nodeText(n *html.Node) string {
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

func elements(n *html.Node, match func(*html.Node) bool) []*html.Node {
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

func named(tags ...string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		for _, t := range tags {
			if n.Data == t {
				return true
			}
		}
		return false
	}
}

// checkAccessible checks the rendered DOM as front/status's page tests check theirs: a
// language; every form control labelled (a <label for> with text, or aria-label); every
// button with text; every chart an image with a text alternative; table headers scoped.
func checkAccessible(t *testing.T, dom string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	if h := elements(doc, named("html")); len(h) != 1 {
		t.Fatal("no <html>")
	} else if lang, _ := attr(h[0], "lang"); lang != "en" {
		t.Error("<html> without lang")
	}
	labels := map[string]string{}
	for _, l := range elements(doc, named("label")) {
		if f, ok := attr(l, "for"); ok {
			labels[f] = nodeText(l)
		}
	}
	controls := elements(doc, named("input", "select", "textarea"))
	if len(controls) < 6 {
		t.Fatalf("only %d form controls rendered", len(controls))
	}
	for _, c := range controls {
		id, _ := attr(c, "id")
		aria, _ := attr(c, "aria-label")
		if labels[id] == "" && strings.TrimSpace(aria) == "" {
			t.Errorf("<%s id=%q> has no label", c.Data, id)
		}
	}
	for _, b := range elements(doc, named("button")) {
		if nodeText(b) == "" {
			t.Errorf("a button without text: %v", b.Attr)
		}
	}
	byID := map[string]*html.Node{}
	for _, n := range elements(doc, func(n *html.Node) bool { _, ok := attr(n, "id"); return ok }) {
		id, _ := attr(n, "id")
		byID[id] = n
	}
	svgs := elements(doc, named("svg"))
	if len(svgs) != 2 {
		t.Fatalf("%d charts rendered, want 2", len(svgs))
	}
	for _, s := range svgs {
		role, _ := attr(s, "role")
		ref, _ := attr(s, "aria-labelledby")
		if role != "img" || byID[ref] == nil || nodeText(byID[ref]) == "" {
			t.Errorf("a chart without role=img and a text alternative: %v", s.Attr)
		}
	}
	for _, th := range elements(doc, named("th")) {
		if s, _ := attr(th, "scope"); s != "col" && s != "row" {
			t.Errorf("table header %q without scope", nodeText(th))
		}
	}
}

// The page's own colours (the fallbacks of the Telegram theme variables) reach WCAG AA's
// 4.5:1 for every pair of text and background the stylesheet uses.
func TestBotMiniAppContrast(t *testing.T) {
	css, err := os.ReadFile("webapp/app.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	re := regexp.MustCompile(`--([a-z-]+):\s*var\(--tg-theme-[a-z-]+,\s*(?:var\(--tg-theme-[a-z-]+,\s*)?(#[0-9a-fA-F]{6})\)`)
	for _, m := range re.FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	if len(vars) < 9 {
		t.Fatalf("theme fallbacks found: %v", vars)
	}
	lum := func(hex string) float64 {
		c := hexColor(hex)
		ch := func(v uint8) float64 {
			x := float64(v) / 255
			if x <= 0.03928 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(c.R) + 0.7152*ch(c.G) + 0.0722*ch(c.B)
	}
	ratio := func(a, b string) float64 {
		x, y := lum(a), lum(b)
		if x < y {
			x, y = y, x
		}
		return (x + 0.05) / (y + 0.05)
	}
	for _, p := range [][2]string{
		{"text", "bg"}, {"text", "section"}, {"text", "field"}, {"hint", "bg"}, {"hint", "section"}, {"hint", "field"},
		{"button-text", "button"}, {"link", "section"}, {"destructive", "section"}, {"accent", "section"},
	} {
		fg, bg := vars[p[0]], vars[p[1]]
		if fg == "" || bg == "" {
			t.Fatalf("no fallback colour for --%s or --%s", p[0], p[1])
		}
		if r := ratio(fg, bg); r < 4.5 {
			t.Errorf("--%s %s on --%s %s: contrast %.2f, want at least 4.5", p[0], fg, p[1], bg, r)
		} else {
			t.Logf("--%s on --%s: %s", p[0], p[1], fmt.Sprintf("%.2f", r))
		}
	}
}
