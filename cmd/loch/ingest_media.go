package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/schema"
)

// newIngestMediaCmd is 'loch ingest video' or 'loch ingest audio': a class
// folder tree of media files, kept compressed (issue 16).
func newIngestMediaCmd(f *ingestFlags, kind schema.SampleCompression) *cobra.Command {
	word, exts, shape := "video", "mp4, m4v, mov, webm, mkv and avi", "uint8 [frames, height, width, 3]"
	if kind == schema.AudioCompression {
		word, exts, shape = "audio", "wav, flac, mp3, ogg, opus and m4a", "float32 [samples, channels]"
	}
	cmd := &cobra.Command{
		Use:   word + " SRC URL",
		Short: "Ingest class sub-folders of " + word + " files, kept compressed",
		Long: `Ingest a classification tree SRC/<class>/<file> of ` + word + ` files (a local
directory or a store URL) into two columns: ` + word + ` (kind ` + word + `, ` + shape + `
decoded; the file's bytes are stored as they are, sample compression ` + word + `) and
label (kind class_label, int64; the class names are the sorted sub-folder names).
Each file is probed with FFmpeg at ingest for its shape, codec and rate, which
'loch info' and SQL then see without decoding. Files are ` + exts + `;
other files and names starting with '.' are skipped. A file FFmpeg cannot read
fails the ingest naming it, or is skipped and counted with --skip-bad.`,
		Example: `  loch ingest ` + word + ` ./clips ./clips-ds
  loch ingest ` + word + ` s3://bucket/raw ./ds --skip-bad`,
		Args: exactArgs("SRC", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, f, args[1], func(o ingest.Options) (ingest.Result, error) {
				return ingest.MediaFolder(cmd.Context(), args[0], args[1], kind, o)
			})
		},
	}
	cmd.Flags().BoolVar(&f.skipBad, "skip-bad", false, "skip files FFmpeg cannot read (missing files still fail)")
	return cmd
}

// parseMediaColumns reads --media-column FIELD=video|audio flags.
func parseMediaColumns(flags []string) (map[string]schema.SampleCompression, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]schema.SampleCompression{}
	for _, fl := range flags {
		field, kind, _ := strings.Cut(fl, "=")
		k := schema.SampleCompression(kind)
		if field == "" || !k.Media() {
			return nil, usagef("--media-column %q: want FIELD=video or FIELD=audio", fl)
		}
		out[field] = k
	}
	return out, nil
}
