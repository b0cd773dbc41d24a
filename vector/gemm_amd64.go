package vector

import "golang.org/x/sys/cpu"

// gemm4x16 sets dst[r*ldd+c] to bias[c] plus the inner product of row r
// of x (stride ldx) with column c of a panel (dim x 16, row-major), for
// r < 4 and c < 16. dim >= 1. In gemm_amd64.s; AVX2 and FMA only.
//
//go:noescape
func gemm4x16(x, panel, bias, dst *float32, dim, ldx, ldd int)

// haveGemm4x16 reports whether the CPU runs gemm4x16.
var haveGemm4x16 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// matVec2 sets dst[r] to the dot product of row r of x (rows of dim
// floats) with q, for r < 2*pairs; dim is a multiple of 32, pairs >= 1.
// Bit for bit vek32.MatMul_Into's result (see gemm_amd64.s). AVX2 and
// FMA only (haveGemm4x16).
//
//go:noescape
func matVec2(x, q, dst *float32, dim, pairs int)
