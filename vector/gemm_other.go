//go:build !amd64

package vector

func gemm4x16(x, panel, bias, dst *float32, dim, ldx, ldd int) {
	panic("vector: gemm4x16 without amd64")
}

const haveGemm4x16 = false

func matVec2(x, q, dst *float32, dim, pairs int) {
	panic("vector: matVec2 without amd64")
}
