pub struct Registry;
