#include "textflag.h"

// func gemm4x16(x, panel, bias, dst *float32, dim, ldx, ldd int)
// dst[r][c] = bias[c] + sum_j x[r*ldx+j] * panel[j*16+c] for r < 4,
// c < 16 (AVX2 and FMA: eight accumulators held in registers).
TEXT ·gemm4x16(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ panel+8(FP), DI
	MOVQ bias+16(FP), BX
	MOVQ dst+24(FP), DX
	MOVQ dim+32(FP), CX
	MOVQ ldx+40(FP), R8
	MOVQ ldd+48(FP), R10
	SHLQ $2, R8
	SHLQ $2, R10
	LEAQ (SI)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	VMOVUPS (BX), Y0
	VMOVUPS 32(BX), Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y1, Y3
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y1, Y7

loop:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (R11), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (R12), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VBROADCASTSS (R13), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $4, R13
	ADDQ $64, DI
	DECQ CX
	JNZ  loop

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R10, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET

// func matVec2(x, q, dst *float32, dim, pairs int)
// dst[r] = <x[r*dim:(r+1)*dim], q> for r < 2*pairs, dim a multiple of 32:
// the arithmetic of vek32.MatMul_Into (MatMulVec_AVX2_F32), two rows at a
// time. Per row, four accumulators take the products of the 32-float
// blocks (FMA, block order), are summed in order, the two 128-bit halves
// added, then the pairs (0+2, 1+3) and the two results: the same sums in
// the same order, so the same bits. A row pair shares the loads of q and
// the horizontal sums.
TEXT ·matVec2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ dst+16(FP), DX
	MOVQ dim+24(FP), R8
	MOVQ pairs+32(FP), R9
	SHLQ $2, R8

pair:
	LEAQ   (SI)(R8*1), R11
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ   BX, BX

block:
	VMOVUPS     (DI)(BX*1), Y0
	VMOVUPS     32(DI)(BX*1), Y1
	VMOVUPS     64(DI)(BX*1), Y2
	VMOVUPS     96(DI)(BX*1), Y3
	VFMADD231PS (SI)(BX*1), Y0, Y4
	VFMADD231PS 32(SI)(BX*1), Y1, Y5
	VFMADD231PS 64(SI)(BX*1), Y2, Y6
	VFMADD231PS 96(SI)(BX*1), Y3, Y7
	VFMADD231PS (R11)(BX*1), Y0, Y8
	VFMADD231PS 32(R11)(BX*1), Y1, Y9
	VFMADD231PS 64(R11)(BX*1), Y2, Y10
	VFMADD231PS 96(R11)(BX*1), Y3, Y11
	ADDQ        $128, BX
	CMPQ        BX, R8
	JNE         block

	VADDPS       Y5, Y4, Y4
	VADDPS       Y6, Y4, Y4
	VADDPS       Y7, Y4, Y4
	VADDPS       Y9, Y8, Y8
	VADDPS       Y10, Y8, Y8
	VADDPS       Y11, Y8, Y8
	VPERM2F128   $0x20, Y8, Y4, Y0
	VPERM2F128   $0x31, Y8, Y4, Y1
	VADDPS       Y1, Y0, Y0
	VPERMILPD    $0x05, Y0, Y1
	VADDPS       Y1, Y0, Y0
	VMOVSHDUP    Y0, Y1
	VADDPS       Y1, Y0, Y0
	VMOVSS       X0, (DX)
	VEXTRACTF128 $1, Y0, X1
	VMOVSS       X1, 4(DX)
	ADDQ         $8, DX
	LEAQ         (R11)(R8*1), SI
	DECQ         R9
	JNZ          pair
	VZEROUPPER
	RET
