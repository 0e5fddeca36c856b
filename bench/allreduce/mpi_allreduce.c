/* Open MPI's own all_reduce time, osu-style: MPI_Allreduce (sum) of MIB
 * mebibytes of floats from one buffer into another, WARMUP untimed calls,
 * then ITERS timed calls between barriers; rank 0 prints the mean seconds.
 * Usage: mpirun -n 2 mpi_allreduce MIB ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long n = (argc > 1 ? atol(argv[1]) : 64) * 1024 * 1024 / (long)sizeof(float);
  const int iters = argc > 2 ? atoi(argv[2]) : 10;
  float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
  for (long i = 0; i < n; i++) in[i] = (float)(i % 7) + (float)rank;
  for (int i = 0; i < 2; i++) MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iters; i++) MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double seconds = (MPI_Wtime() - start) / iters;
  if (rank == 0) printf("%.6f\n", seconds);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
