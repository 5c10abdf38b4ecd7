// Package answers owns the grader's test over the answers a class writes:
// the known wrong answers to each exercise and a right one, kept under
// testdata/answers and graded in place of the student's file. It has no
// code of its own; its tests run on a stack of their own, beside
// internal/grade's tests of the starters and the answer keys.
package answers
