package loader

import (
	"fmt"
	"os"
)

func (l *Loader) debugBufs() {
	if os.Getenv("LOCH_BUFDEBUG") != "" {
		g, f := l.bufs.Counts()
		fmt.Fprintf(os.Stderr, "bufs gets %d fresh %d idle %d MiB\n", g, f, l.bufs.Idle()>>20)
	}
}
