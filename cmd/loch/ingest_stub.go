//go:build ingeststub

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newIngestCmd stands in for the ingest command (ingest.go) in builds with
// the ingeststub tag, made while ingest.go does not exist yet.
func newIngestCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ingest",
		Short:   "Ingest files into a dataset (not built in)",
		Example: "  loch ingest ./pets images/",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("ingest is not built into this binary")
		},
	}
}
