package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// runStrategies prints the strategy registry: a table for people, or with
// --markdown docs/strategies.md's table.
func runStrategies(_ context.Context, args []string) error {
	fs := newFlagSet("strategies")
	markdown := fs.Bool("markdown", false, "print docs/strategies.md's Markdown table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *markdown {
		fmt.Print(catalog.MarkdownTable())
		return nil
	}
	return writeStrategies(os.Stdout, catalog.Strategies())
}

// writeStrategies writes the strategy table for people: the catalogue's
// columns, FLAWED BY DESIGN (catalog.ColFlawed) among them, yes or no.
func writeStrategies(w io.Writer, ss []catalog.Strategy) error {
	yesNo := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STRATEGY\tKIND\t%s\tTOKENS\tRENEWS\tNEEDS\tSUMMARY\n", strings.ToUpper(catalog.ColFlawed))
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, yesNo(s.Flawed), yesNo(s.Tokens), yesNo(s.Renews), s.Server, s.Summary)
	}
	return tw.Flush()
}
