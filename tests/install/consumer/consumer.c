/* A program built against an installed dtmpi: packs a vector type through
 * MPI_Pack (dtmpi's, linked before -lmpi) and checks the bytes. */
#include <dtmpi/dtmpi.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Datatype v;
  MPI_Type_vector(4, 1, 3, MPI_INT, &v);
  MPI_Type_commit(&v);
  int src[12], out[4], pos = 0;
  for (int i = 0; i < 12; ++i) src[i] = i;
  MPI_Pack(src, 1, v, out, sizeof out, &pos, MPI_COMM_SELF);
  int ok = dtmpi_active() && out[0] == 0 && out[1] == 3 && out[2] == 6 && out[3] == 9 && pos == 16;
  printf("consumer: dtmpi %s active=%d packed %d %d %d %d -> %s\n", dtmpi_version(), dtmpi_active(),
         out[0], out[1], out[2], out[3], ok ? "ok" : "WRONG");
  MPI_Type_free(&v);
  MPI_Finalize();
  return ok ? 0 : 1;
}
