// An MPI program for Berth's MPI launch (docs/launch.md): every rank prints
// its rank, the world size, the host it was started on (BERTH_RSH_HOST when
// examples/launch/local-rsh started it, else the host name) and the sum of
// rank + 1 over all ranks by MPI_Allreduce; exits 1 when the sum is wrong.
//   mpicc -o mpi_allreduce examples/launch/mpi_allreduce.c
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mine = rank + 1;
  long sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  char name[256] = "";
  const char* host = getenv("BERTH_RSH_HOST");
  if (!host) {
    gethostname(name, sizeof name - 1);
    host = name;
  }
  const long want = (long)size * (size + 1) / 2;
  printf("mpi rank=%d size=%d host=%s allreduce=%ld %s\n", rank, size, host, sum, sum == want ? "ok" : "MISMATCH");
  fflush(stdout);
  MPI_Finalize();
  return sum == want ? 0 : 1;
}
