//go:build cgo && !noffmpeg

package viewer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/media"
)

// played is what the browser reports of a video or audio element once it
// has played a little.
type played struct {
	Err           string
	Duration      float64
	Width, Height int
	Time          float64 // currentTime after playing
}

// playJS plays the media element that selector finds, muted, until its
// currentTime passes 0.1 s, and reports it; a media error is reported in
// Err.
const playJS = `(async () => {
	const el = document.querySelector(%q);
	if (!el) return {Err: "no element %s"};
	el.muted = true;
	try {
		await el.play();
		await new Promise((ok, fail) => {
			const tick = () => el.error ? fail(new Error("media error " + el.error.code + ": " + el.error.message)) : el.currentTime > 0.1 ? ok() : setTimeout(tick, 20);
			tick();
		});
		el.pause();
	} catch (e) {
		return {Err: String(e) + (el.error ? " (media error " + el.error.code + ": " + el.error.message + ")" : "")};
	}
	return {Duration: el.duration, Width: el.videoWidth || 0, Height: el.videoHeight || 0, Time: el.currentTime};
})()`

// TestBrowserMedia plays the media fixture's videos (mp4, webm) and audio
// (an mp3 served as ingested, an aiff served decoded as WAV) in Debian's
// chromium from the grid, and checks their durations and sizes against
// the source files; and that tiny pictures are shown enlarged, sharp. A
// missing browser fails the test.
func TestBrowserMedia(t *testing.T) {
	exe := chromium(t)
	u := filepath.Join(t.TempDir(), "clips")
	src := makeMedia(t, u)
	ts, _ := newTestServer(t, u, Options{})

	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.WindowSize(1200, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, time.Minute)
	defer cancel()
	awaitPromise := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

	var polled bool
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(ts.URL+"/t/clips/"),
		chromedp.Poll(`document.getElementById("more").classList.contains("done")`, &polled, patient),
	))
	for row, s := range src {
		card := fmt.Sprintf(`#grid article.card[data-pos="%d"] `, row)
		var vid, aud played
		require.NoError(t, chromedp.Run(bctx,
			chromedp.Evaluate(fmt.Sprintf(playJS, card+"video", "video"), &vid, awaitPromise),
			chromedp.Evaluate(fmt.Sprintf(playJS, card+"audio", "audio"), &aud, awaitPromise),
		))
		t.Logf("row %d: video %+v, audio %+v", row, vid, aud)
		require.Empty(t, vid.Err, "row %d's video (%s)", row, s.videoType)
		require.Empty(t, aud.Err, "row %d's audio (%s)", row, s.audioType)
		in, err := media.ProbeVideoBytes(s.video)
		require.NoError(t, err)
		require.Equal(t, [2]int{in.Width, in.Height}, [2]int{vid.Width, vid.Height}, "row %d's video size", row)
		require.InDelta(t, in.Duration.Seconds(), vid.Duration, 1/in.FPS(), "row %d's video lasts the source's duration, within a frame", row)
		require.Greater(t, vid.Time, 0.1)
		in, err = media.ProbeAudioBytes(s.audio)
		require.NoError(t, err)
		// An mp3's duration in a browser counts its encoder's padding:
		// within an mp3 frame (1152 samples) of the source's.
		require.InDelta(t, in.Duration.Seconds(), aud.Duration, 1152.0/float64(in.SampleRate), "row %d's audio lasts the source's duration", row)
		require.Greater(t, aud.Time, 0.1)
	}

	// The 8×8 picture fills its thumbnail's box, pixels kept sharp, in
	// the grid and on the row page.
	var tiny struct {
		W, H, NaturalW int
		Rendering      string
	}
	const tinyJS = `(() => {
		const i = document.querySelector(%q);
		const r = i.getBoundingClientRect();
		return {W: Math.round(r.width), H: Math.round(r.height), NaturalW: i.naturalWidth, Rendering: getComputedStyle(i).imageRendering};
	})()`
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Poll(`Array.from(document.querySelectorAll('#grid .kind-image img')).every(i => i.complete && i.naturalWidth > 0)`, &polled, patient),
		chromedp.Evaluate(fmt.Sprintf(tinyJS, `#grid article.card[data-pos="0"] .kind-image img`), &tiny),
	))
	require.Equal(t, 192, tiny.W)
	require.Equal(t, 192, tiny.H)
	require.Equal(t, 192, tiny.NaturalW, "enlarged by the server")
	require.Equal(t, "pixelated", tiny.Rendering)
	var rowURL string
	require.NoError(t, chromedp.Run(bctx, chromedp.Evaluate(`document.querySelector('#grid article.card[data-pos="0"] a.pos').href`, &rowURL)))
	require.NoError(t, chromedp.Run(bctx,
		chromedp.Navigate(rowURL),
		chromedp.Poll(`document.querySelector(".row.full .kind-image img") !== null && document.querySelector(".row.full .kind-image img").complete`, &polled, patient),
		chromedp.Evaluate(fmt.Sprintf(tinyJS, `.row.full .kind-image img`), &tiny),
	))
	require.Equal(t, fullTiny, tiny.W)
	require.Equal(t, fullTiny, tiny.H)
	require.Equal(t, 8, tiny.NaturalW, "enlarged by the browser")
	require.Equal(t, "pixelated", tiny.Rendering)
}
