package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

func newCreateCmd() *cobra.Command {
	var schemaFile string
	cmd := &cobra.Command{
		Use:   "create URL --schema FILE",
		Short: "Create an empty dataset with a schema",
		Long: `Create makes an empty dataset at URL with the columns of a schema file
(JSON or YAML; "-" reads standard input) and prints the id of its first
version. It fails, changing nothing, if a dataset already exists at URL.
URL is a local path or object storage: mem:// (process-local memory) is
refused, since the dataset would be gone when the command exits.

A schema is a list of columns, each with a name and a kind or dtype:

  columns:
    - {name: image, kind: image, sample_compression: png}
    - {name: label, kind: class_label, class_names: [cat, dog]}
    - {name: angles, dtype: float32, shape: [7]}
    - {name: caption, kind: text}`,
		Example: `  loch create ./pets --schema schema.yaml
  loch create s3://bucket/pets --schema schema.json
  cat schema.yaml | loch create ./scratch --schema -`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkURL(args[0]); err != nil {
				return err
			}
			s, err := readSchema(cmd.InOrStdin(), schemaFile)
			if err != nil {
				return err
			}
			d, err := loch.Create(cmd.Context(), args[0], s)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), d.Version())
			return d.Close()
		},
	}
	cmd.Flags().StringVar(&schemaFile, "schema", "", "schema file, JSON or YAML (- for standard input)")
	_ = cmd.MarkFlagRequired("schema")
	return cmd
}

// readSchema reads and parses the schema file name ("-" is stdin).
func readSchema(stdin io.Reader, name string) (schema.Schema, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return schema.Schema{}, fmt.Errorf("read schema: %w", err)
	}
	s, err := schema.Parse(data)
	if err != nil {
		return schema.Schema{}, fmt.Errorf("schema %s: %w", name, err)
	}
	return s, nil
}
