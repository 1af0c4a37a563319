import actorflow as flow
flow.Tensor([[1,2,3],[4,5,6]])
