/* The MPI_IN_PLACE forms of the collectives: MPI_IN_PLACE differs between
   MPI implementations ((void *)1 in Open MPI, (void *)-1 in MPICH), so it is
   taken from mpi.h. Counts are per call (all-reduce, reduce) or per rank. */
#include <mpi.h>

int collbench_allreduce_in_place(void *buffer, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    return MPI_Allreduce(MPI_IN_PLACE, buffer, count, type, op, comm);
}

int collbench_allgather_in_place(void *buffer, int count, MPI_Datatype type, MPI_Comm comm)
{
    return MPI_Allgather(MPI_IN_PLACE, count, type, buffer, count, type, comm);
}

int collbench_reduce_scatter_block_in_place(void *buffer, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    return MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer, count, type, op, comm);
}

int collbench_reduce_in_place_root(void *buffer, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    return MPI_Reduce(MPI_IN_PLACE, buffer, count, type, op, root, comm);
}

int collbench_gather_in_place_root(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    return MPI_Gather(MPI_IN_PLACE, count, type, buffer, count, type, root, comm);
}

int collbench_scatter_in_place_root(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    return MPI_Scatter(buffer, count, type, MPI_IN_PLACE, count, type, root, comm);
}
