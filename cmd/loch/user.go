package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/pgwire"
)

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the users file of loch serve --pg",
	}
	var role string
	add := &cobra.Command{
		Use:   "add FILE NAME --role ROLE",
		Short: "Add or replace a user of loch serve --pg; the password is read from standard input",
		Long: `Add reads NAME's password from the first line of standard input and stores
its SCRAM-SHA-256 verifier (salt, 4096 iterations, StoredKey, ServerKey;
never the password) with ROLE in the users file FILE, which it creates
(mode 0600) when missing. Roles are the built-in reader, curator and admin
and those FILE defines (docs/pg.md).`,
		Example: `  echo "$PASSWORD" | loch user add users.json alice --role curator`,
		Args:    exactArgs("FILE", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUserAdd(&userAddOptions{streams: streamsOf(cmd), file: args[0], name: args[1], role: role})
		},
	}
	add.Flags().StringVar(&role, "role", "reader", "the user's role: reader, curator, admin or one the file defines")
	cmd.AddCommand(add)
	return cmd
}

// userAddOptions are loch user add's arguments and flags.
type userAddOptions struct {
	streams
	file, name, role string
}

// runUserAdd adds user o.name with o.role to the users file o.file, its
// password read from standard input.
func runUserAdd(o *userAddOptions) error {
	file, name, role, in, out := o.file, o.name, o.role, o.stdin, o.stdout
	u, err := pgwire.LoadUsers(file)
	if err != nil {
		return err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("read the password from standard input: %w", err)
	}
	if err := u.AddUser(name, role, strings.TrimRight(line, "\r\n")); err != nil {
		return err
	}
	if err := u.Save(file); err != nil {
		return err
	}
	fmt.Fprintf(out, "user %s (role %s) saved in %s\n", name, role, file)
	return nil
}
