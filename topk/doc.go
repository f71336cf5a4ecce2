// Package topk keeps the heaviest keys of a stream in constant memory
// (the space-saving sketch of Metwally, Agrawal and El Abbadi), with an
// error bound for every count.
package topk
