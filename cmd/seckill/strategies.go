package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// runStrategies prints the strategy registry: a table for people, or with
// --markdown the README's table.
func runStrategies(_ context.Context, args []string) error {
	fs := newFlagSet("strategies")
	markdown := fs.Bool("markdown", false, "print the README's Markdown table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *markdown {
		fmt.Print(catalog.MarkdownTable())
		return nil
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STRATEGY\tKIND\tFLAWED\tTOKENS\tRENEWS\tNEEDS\tSUMMARY")
	for _, s := range catalog.Strategies() {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%s\t%s\n", s.Name, s.Kind, s.Flawed, s.Tokens, s.Renews, s.Server, s.Summary)
	}
	return tw.Flush()
}
